-- Probe queries over colony.data.probes' sensors schema (readings, sensors, windows): time keys,
-- casts between dates and timestamps, top-N per group, range joins. See docs/query.md.
select sensor, avg(temp), stddev(temp) from readings where ts >= timestamp '2025-03-10 00:00:00' group by sensor
select s.site, count(*) from readings r join sensors s on r.sensor = s.sensor where r.temp > s.hi group by s.site
select r.sensor, count(*) from readings r join sensors s on r.sensor = s.sensor and r.temp between s.lo and s.hi group by r.sensor
select w.w, count(*) from readings r join windows w on r.ts >= w.start and r.ts < w.stop group by w.w
select date_bin(interval '1 hour', ts) as h, avg(hum) from readings group by h order by h
with hot as (select sensor, max(temp) as m from readings group by sensor) select count(*) from hot where m > 30
select sensor, ts, temp from (select sensor, ts, temp, row_number() over (partition by sensor order by temp desc) as rk from readings) where rk <= 3
select status, count(*) from readings where status <> 'ok' group by status
select count(*) from readings where temp is null and status = 'fail'
select sensor, lag(temp) over (partition by sensor order by ts) as prev from readings where seq % 1000 = 0
select * from readings where seq between 1000 and 1100
select s.site, approx_percentile_cont(r.hum, 0.5) from readings r join sensors s using (sensor) group by s.site
select count(*) from readings r where exists (select 1 from sensors s where s.sensor = r.sensor and s.installed > date '2024-06-01')
select sensor, count(*) from readings group by sensor having avg(temp) > 20.1
select distinct status from readings
select extract(day from ts) as d, sum(case when status = 'fail' then 1 else 0 end) from readings group by d
select r1.seq, r2.seq from readings r1 join readings r2 on r1.seq = r2.seq + 1 where r1.seq < 5000
select sensor, min(ts), max(ts) from readings where hum > 89.5 group by sensor order by 2 limit 10
select count(*) from readings where sensor in (select sensor from sensors where site = 'lab')
select cast(ts as date) as day, count(distinct sensor) from readings group by day
