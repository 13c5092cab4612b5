-- String work on TPC-H (thirty-second stop): string functions of both classes (a length, a
-- case change, a prefix or suffix match; a substring, a search, a replace), min/max and
-- approx_distinct of strings, comparisons and IN lists, on short to long strings of lineitem,
-- orders and customer. Written to probe the string classes (`str`, `str_fast`) and the
-- string aggregates, so not a held-out set: the other query files are.
-- Run: colony bench query --queries THIS --data DIR (colony.data.tpch.write(DIR, 0.05))
-- family: S1
select count(*) from orders where o_comment like '%special%requests%'
-- family: S2
select o_orderpriority, count(*) from orders where o_clerk like 'Clerk#00000001%' group by o_orderpriority
-- family: S3
select count(*) from lineitem where l_shipinstruct like 'DELIVER%'
-- family: S4
select upper(l_shipmode) as m, count(*) from lineitem group by upper(l_shipmode)
-- family: S5
select max(l_comment), min(l_comment) from lineitem where l_quantity < 20
-- family: S6
select approx_distinct(o_clerk) from orders
-- family: S7
select substr(o_orderpriority, 1, 1) as p, count(*) from orders group by substr(o_orderpriority, 1, 1)
-- family: S8
select count(*) from lineitem where length(l_comment) > 30
-- family: S9
select l_shipmode, max(l_shipinstruct) from lineitem group by l_shipmode
-- family: S10
select count(*) from lineitem where strpos(l_comment, 'fur') > 0
-- family: S11
select o_orderstatus, count(*) from orders where o_comment not like '%pending%' group by o_orderstatus
-- family: S12
select count(*) from lineitem where l_shipmode in ('AIR', 'REG AIR') and l_shipinstruct <> 'NONE'
-- family: S13
select c_mktsegment, count(*) from customer where c_phone like '1%' group by c_mktsegment
-- family: S14
select count(*) from lineitem where lower(l_shipinstruct) = 'take back return'
-- family: S15
select replace(l_shipmode, ' ', '_') as m, count(*) from lineitem group by 1
-- family: S16
select l_linestatus, approx_distinct(l_comment) from lineitem group by l_linestatus
