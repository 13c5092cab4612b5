-- Query shapes over TPC-H (twenty-ninth stop), 18 families none of the 22 queries has in this
-- form: BETWEEN on dates, IN lists with LIKE, extract(year), a LEFT JOIN with a condition, a
-- three-way join, IN subquery, HAVING on a sum, substr keys, count distinct.
-- Run: colony bench query --queries THIS --data DIR (colony.data.tpch.write(DIR, 0.05))
-- family: T1
select l_returnflag, count(*), sum(l_quantity) from lineitem where l_shipdate between date '1995-01-01' and date '1995-03-31' group by l_returnflag
-- family: T2
select o_orderpriority, count(*) from orders where o_orderdate >= date '1996-01-01' and o_totalprice > 200000 group by o_orderpriority order by o_orderpriority
-- family: T3
select c_mktsegment, avg(c_acctbal) from customer where c_acctbal > 0 group by c_mktsegment
-- family: T4
select n_name, count(*) from supplier join nation on s_nationkey = n_nationkey group by n_name order by 2 desc
-- family: T5
select p_brand, count(*) from part where p_name like '%green%' and p_size in (1, 5, 10, 15) group by p_brand
-- family: T6
select l_shipmode, sum(l_extendedprice * (1 - l_discount)) as rev from lineitem where l_discount between 0.05 and 0.07 group by l_shipmode order by rev desc
-- family: T7
select extract(year from o_orderdate) as y, count(*) from orders group by extract(year from o_orderdate) order by y
-- family: T8
select o_orderkey, o_totalprice from orders order by o_totalprice desc limit 10
-- family: T9
select count(*) from lineitem where l_commitdate < l_receiptdate and l_shipinstruct = 'DELIVER IN PERSON'
-- family: T10
select s_name from supplier where s_suppkey in (select ps_suppkey from partsupp where ps_availqty < 100) order by s_name limit 20
-- family: T11
select c_custkey, count(o_orderkey) from customer left join orders on c_custkey = o_custkey and o_orderstatus = 'F' group by c_custkey order by 2 desc limit 10
-- family: T12
select r_name, count(*) from region join nation on r_regionkey = n_regionkey join customer on n_nationkey = c_nationkey group by r_name
-- family: T13
select l_linestatus, max(l_shipdate), min(l_shipdate) from lineitem group by l_linestatus
-- family: T14
select count(distinct l_partkey) from lineitem where l_quantity > 45
-- family: T15
select p_type, avg(p_retailprice) from part where p_container like 'SM%' group by p_type order by 2 desc limit 5
-- family: T16
select o_orderstatus, sum(o_totalprice) from orders where o_clerk = 'Clerk#000000088' group by o_orderstatus
-- family: T17
select l_orderkey, sum(l_quantity) from lineitem group by l_orderkey having sum(l_quantity) > 250
-- family: T18
select substr(c_phone, 1, 2) as cc, count(*) from customer group by substr(c_phone, 1, 2) order by cc
