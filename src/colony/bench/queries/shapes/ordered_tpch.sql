-- Queries over rows stored in a key's order (thirty-first stop): colony.data.tpch stores
-- lineitem and orders by order key, part and partsupp by part key. The latest N by that key
-- (a top-k against the stored order), the first N (with it), ranges of the key, and ranges of
-- the key beside a condition on another column. Written to probe the stored-order statistic
-- (colony.query.stats.stored_order), so not a held-out set: the other query files are.
-- Run: colony bench query --queries THIS --data DIR (colony.data.tpch.write(DIR, 0.05))
-- family: O1
select l_orderkey, l_extendedprice from lineitem order by l_orderkey desc limit 10
-- family: O2
select * from lineitem order by l_orderkey desc limit 100
-- family: O3
select o_orderkey, o_orderdate, o_totalprice from orders order by o_orderkey desc limit 20
-- family: O4
select l_orderkey, l_quantity from lineitem order by l_orderkey limit 50
-- family: O5
select * from lineitem where l_orderkey < 30000
-- family: O6
select * from lineitem where l_orderkey between 100000 and 200000
-- family: O7
select l_orderkey, l_partkey, l_quantity from lineitem where l_orderkey >= 250000 and l_quantity < 10
-- family: O8
select * from orders where o_orderkey > 200000
-- family: O9
select count(*), sum(l_extendedprice) from lineitem where l_orderkey < 150000
-- family: O10
select l_orderkey, l_shipdate from lineitem where l_orderkey < 100000 order by l_orderkey desc limit 5
-- family: O11
select * from partsupp where ps_partkey < 2000
-- family: O12
select p_partkey, p_name, p_retailprice from part order by p_partkey desc limit 10
-- family: O13
select o_orderkey, o_totalprice from orders where o_orderkey < 100000 and o_totalprice > 200000
-- family: O14
select l_orderkey, l_comment from lineitem where l_orderkey > 280000 and l_comment like '%final%'
-- family: O15
select * from lineitem where l_orderkey % 7 = 0
-- family: O16
select o_custkey, o_orderkey from orders where o_orderkey between 50000 and 60000 order by o_orderkey desc limit 3
