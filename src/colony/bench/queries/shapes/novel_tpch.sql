-- Query shapes over TPC-H (sixty-third stop), 30 families written as a new user would, none in
-- the other TPC-H files in this form: ROLLUP, INTERSECT / EXCEPT, NOT EXISTS, a CTE, CASE inside
-- sums, string keys, date_trunc, OFFSET, a correlated scalar subquery, FULL / RIGHT / CROSS joins,
-- stddev / approx_distinct / approx_percentile_cont, rank / lag / ntile, FILTER, NOT IN, a
-- self-join, an integer-division key. All 30 ran and were modelled; two estimator gaps it found
-- (an integer-division key, a join key's surviving values) were fixed that stop, so it is no
-- longer unseen. Run: colony bench query --queries THIS --data DIR (colony.data.tpch.write(DIR, 0.05))
-- family: N1
select l_returnflag, l_linestatus, count(*) from lineitem group by rollup(l_returnflag, l_linestatus)
-- family: N2
select o_custkey from orders where o_orderdate < date '1993-06-01' intersect select c_custkey from customer where c_acctbal > 9000
-- family: N3
select c_custkey from customer where c_mktsegment = 'BUILDING' except select o_custkey from orders
-- family: N4
select c_name from customer c where not exists (select 1 from orders o where o.o_custkey = c.c_custkey) order by c_name limit 15
-- family: N5
with big as (select o_custkey, sum(o_totalprice) as t from orders group by o_custkey) select count(*), avg(t) from big where t > 500000
-- family: N6
select l_shipmode, sum(case when l_quantity > 30 then 1 else 0 end) as big, sum(case when l_quantity <= 30 then 1 else 0 end) as small from lineitem group by l_shipmode
-- family: N7
select upper(substr(p_type, 1, 5)) as k, count(*), avg(length(p_name)) from part group by upper(substr(p_type, 1, 5))
-- family: N8
select date_trunc('month', o_orderdate) as m, count(*) from orders where o_orderdate >= date '1997-01-01' group by date_trunc('month', o_orderdate) order by m
-- family: N9
select o_orderkey, o_orderdate + interval '30 days' as due from orders where o_orderstatus = 'O' order by o_orderkey limit 50 offset 100
-- family: N10
select s_suppkey, s_name, (select count(*) from partsupp where ps_suppkey = s_suppkey and ps_availqty > 5000) as n from supplier order by n desc, s_suppkey limit 10
-- family: N11
select n_name, r_name from nation full outer join region on n_regionkey = r_regionkey and r_name <> 'ASIA'
-- family: N12
select o_orderpriority, stddev(o_totalprice), var_samp(o_totalprice), approx_distinct(o_custkey) from orders group by o_orderpriority
-- family: N13
select l_orderkey, l_linenumber, rank() over (partition by l_orderkey order by l_extendedprice desc) as r from lineitem where l_orderkey < 2000
-- family: N14
select l_orderkey, l_extendedprice - lag(l_extendedprice) over (partition by l_orderkey order by l_linenumber) as d from lineitem where l_shipdate > date '1998-10-01'
-- family: N15
select coalesce(nullif(c_mktsegment, 'AUTOMOBILE'), 'car') as seg, round(avg(c_acctbal), 2) from customer group by 1
-- family: N16
select p_partkey, p_retailprice from part where p_retailprice > (select avg(p_retailprice) * 1.2 from part) and p_size between 10 and 20
-- family: N17
select count(*) from lineitem where l_partkey not in (select p_partkey from part where p_container like 'SM%')
-- family: N18
select a.n_name, b.n_name from nation a join nation b on a.n_regionkey = b.n_regionkey and a.n_nationkey < b.n_nationkey
-- family: N19
select cast(o_totalprice as bigint) / 100000 as bucket, count(*) from orders group by 1 order by 1
-- family: N20
select distinct l_shipinstruct, l_shipmode from lineitem where l_discount = 0.0
-- family: N21
select c_nationkey, count(*) filter (where c_acctbal < 0) as neg, count(*) from customer group by c_nationkey
-- family: N22
select o_orderstatus, approx_percentile_cont(o_totalprice, 0.5) from orders group by o_orderstatus
-- family: N23
select r_name, count(*) from region cross join supplier where s_acctbal > 5000 group by r_name
-- family: N24
select l_suppkey, sum(l_quantity) from lineitem right join supplier on l_suppkey = s_suppkey where s_nationkey = 7 group by l_suppkey
-- family: N25
select ps_partkey, ps_suppkey from partsupp where ps_supplycost < 5 or ps_availqty in (1, 2, 3, 4, 5)
-- family: N26
select o_clerk, count(*) from orders where o_comment ilike '%special%' group by o_clerk order by 2 desc limit 5
-- family: N27
select extract(month from l_shipdate) as mo, min(l_discount), max(l_tax) from lineitem where extract(year from l_shipdate) = 1996 group by 1
-- family: N28
select count(*), count(o_comment), sum(o_shippriority) from orders where o_orderdate is not null and o_clerk is null
-- family: N29
select ntile(4) over (order by c_acctbal) as q, c_custkey from customer where c_nationkey = 3
-- family: N30
select l_orderkey, sum(l_extendedprice) as s from lineitem group by l_orderkey having sum(l_extendedprice) > 400000 order by s desc
