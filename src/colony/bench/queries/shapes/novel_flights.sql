-- Query shapes over nycflights13 (sixty-third stop), 25 families written as a new user would: an
-- integer-division key, joins to filtered dimensions, CUBE and GROUPING SETS, date_trunc week,
-- EXCEPT, a two-key join to weather, percentile_cont, count distinct with HAVING, dense_rank, CASE
-- bands, a modulus filter, a correlated two-column filter, substr keys. All ran and were modelled;
-- the two filters led to the row-sample selectivity that stop, so it is no longer unseen.
-- Run: colony bench query --queries THIS --data DIR (colony.data.nycflights.write(DIR))
-- family: M1
select carrier, dep_delay / 60 as hours_late, count(*) from flights where dep_delay > 0 group by carrier, dep_delay / 60
-- family: M2
select f.dest, a.name, count(*) from flights f join airports a on f.dest = a.faa where a.tz = -8 group by f.dest, a.name
-- family: M3
select p.manufacturer, avg(f.distance) from flights f join planes p on f.tailnum = p.tailnum where p.seats > 300 group by p.manufacturer
-- family: M4
select f.tailnum, count(*) from flights f join planes p on f.tailnum = p.tailnum where p.year < 1990 group by f.tailnum
-- family: M5
select origin, month, count(*) as n from flights group by cube(origin, month)
-- family: M6
select date_trunc('week', time_hour) as wk, avg(arr_delay) from flights where origin = 'JFK' group by 1 order by 1
-- family: M7
select dest from flights where carrier = 'UA' except select dest from flights where carrier = 'AA'
-- family: M8
select f.origin, f.time_hour, w.temp, f.dep_delay from flights f join weather w on f.origin = w.origin and f.time_hour = w.time_hour where w.visib < 1
-- family: M9
select carrier, percentile_cont(0.9) within group (order by arr_delay) from flights group by carrier
-- family: M10
select dest, count(distinct tailnum), count(distinct carrier) from flights group by dest having count(*) > 1000
-- family: M11
select flight, carrier, dense_rank() over (partition by carrier order by distance desc) as r from flights where month = 6 and day = 1
-- family: M12
select tailnum, sum(air_time) as t from flights where tailnum is not null group by tailnum order by t desc limit 20
-- family: M13
select case when distance < 500 then 'short' when distance < 1500 then 'mid' else 'long' end as band, avg(arr_delay), count(*) from flights group by 1
-- family: M14
select a.carrier, b.name from (select carrier, count(*) c from flights group by carrier) a join airlines b on a.carrier = b.carrier where a.c > 10000
-- family: M15
select origin, hour, avg(dep_delay) as d from flights where sched_dep_time % 100 = 0 group by origin, hour
-- family: M16
select w.origin, w.month, max(w.wind_speed), min(w.temp) from weather w where w.precip > 0 group by w.origin, w.month
-- family: M17
select count(*) from flights where dest in (select faa from airports where alt > 5000)
-- family: M18
select f.carrier, count(*) from flights f left join planes p on f.tailnum = p.tailnum where p.tailnum is null group by f.carrier
-- family: M19
select distinct origin, dest from flights where distance between 1000 and 1100
-- family: M20
select extract(dow from time_hour) as dow, avg(dep_delay) from flights group by 1
-- family: M21
select substr(tailnum, 1, 2) as pre, count(*) from flights group by 1 order by 2 desc limit 10
-- family: M22
select carrier, arr_delay - dep_delay as gain from flights where arr_delay - dep_delay < -30 order by gain limit 100
-- family: M23
select p.engines, p.type, count(*) from planes p group by grouping sets ((p.engines), (p.type), ())
-- family: M24
select f.origin, a.lat, a.lon from flights f join airports a on f.origin = a.faa group by f.origin, a.lat, a.lon
-- family: M25
select month, day, count(*) as n from flights group by month, day having count(*) < 700 order by n
