-- Query shapes over TPC-H (sixty-fifth stop), 14 families with string and date functions no
-- earlier query file had: md5 and sha256 of names, regexp_replace / regexp_like / regexp_count,
-- numbers cast to strings (concatenated, matched with LIKE), date_bin of a date cast to a
-- timestamp, string_agg, levenshtein, lead over orders, extract quarter. Written before any
-- run; runs 190 (old estimator) and 191 (new) of the sixty-fifth stop.
-- Run: colony bench query --queries THIS --data DIR (colony.data.tpch.write(DIR, 0.05))
-- family: V1
select md5(c_name) as h, c_mktsegment from customer where c_acctbal > 5000
-- family: V2
select regexp_replace(p_type, '[A-Z]+ ', '') as t, count(*) from part group by 1
-- family: V3
select o_orderpriority, count(*) from orders where regexp_like(o_comment, 'special.*requests') group by 1
-- family: V4
select cast(l_orderkey as varchar) || '-' || cast(l_linenumber as varchar) as k, l_quantity from lineitem where l_shipdate > date '1998-10-01'
-- family: V5
select date_bin(interval '7 days', cast(o_orderdate as timestamp), timestamp '1992-01-01') as wk, sum(o_totalprice) from orders group by 1
-- family: V6
select s_nationkey, string_agg(s_name, ';') from supplier group by s_nationkey
-- family: V7
select sha256(p_name) as h from part where p_size between 10 and 12
-- family: V8
select l_returnflag, count(*) from lineitem where cast(l_quantity as varchar) like '4%' group by 1
-- family: V9
select levenshtein(c_name, 'Customer#000000001') as d, count(*) from customer group by 1 order by 1 limit 5
-- family: V10
select o_custkey, lead(o_totalprice) over (partition by o_custkey order by o_orderdate) from orders where o_orderdate < date '1993-01-01'
-- family: V11
select regexp_count(l_comment, 'e') as n, count(*) from lineitem group by 1
-- family: V12
select n_name, count(*) from customer join nation on c_nationkey = n_nationkey where cast(c_custkey as varchar) like '%7' group by n_name
-- family: V13
select upper(substr(p_brand, 7, 2)) as b, avg(p_retailprice) from part group by 1
-- family: V14
select extract(quarter from o_orderdate) as q, count(*) from orders where o_orderstatus = 'F' group by 1
