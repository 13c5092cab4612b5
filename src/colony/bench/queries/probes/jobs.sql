-- Probe queries over colony.data.probes' jobs schema (jobs, samples): an HPC job table and its
-- nodes' telemetry; two queries a family with other constants. See docs/query.md.
-- family: P1
select queue, count(*) as n, avg(walltime_s) as w from jobs where day between date '2026-03-01' and date '2026-05-31' group by queue
select queue, count(*) as n, avg(walltime_s) as w from jobs where day between date '2026-06-01' and date '2026-06-30' group by queue
-- family: P2
select user, sum(cost) as c from jobs where cost > 50.00 and ok group by user order by c desc limit 10
select user, sum(cost) as c from jobs where cost > 150.00 and ok group by user order by c desc limit 10
-- family: P3
select s.state, count(*) as n, avg(s.power_w) as p from samples s join jobs j on s.job_id = j.job_id where j.queue = 'gpu' group by s.state
select s.state, count(*) as n, avg(s.power_w) as p from samples s join jobs j on s.job_id = j.job_id where j.queue = 'bigmem' and j.nodes > 20 group by s.state
-- family: P4
select job_id, t, power_w from samples where temp_c > 75 and state <> 'idle' order by power_w desc limit 50
select job_id, t, power_w from samples where temp_c is null and bytes_rw > 100000 order by t limit 50
-- family: P5
select case when nodes >= 128 then 'capability' when nodes >= 16 then 'capacity' else 'small' end as cls, count(*) as n, sum(nodes * walltime_s) / 3600 as node_hours from jobs group by 1
select case when walltime_s > 7200 then 'long' else 'short' end as cls, count(distinct user) as users from jobs where tags like '%omp%' group by 1
-- family: P6
select date_trunc('week', submit) as wk, count(*) as n from jobs where submit >= timestamp '2026-04-01T00:00:00Z' group by 1 order by 1
select date_trunc('month', t) as m, max(power_w) as p from samples where t < timestamp '2026-03-15T00:00:00' group by 1 order by 1
-- family: P7
select j.user, count(*) as n from jobs j where exists (select 1 from samples s where s.job_id = j.job_id and s.state = 'fail') group by j.user order by n desc limit 20
select count(*) from jobs j where j.job_id not in (select job_id from samples where power_w > 500)
-- family: P8
select job_id, power_w, rank() over (partition by job_id order by power_w desc) as r from samples where node < 64
select user, cost, sum(cost) over (partition by user order by submit) as running from jobs where queue in ('debug', 'long') and cost is not null
-- family: P9
select job_id from jobs where ok is null union all select job_id from samples where state = 'fail' and power_w < 200
select upper(substr(user, 1, 5)) as u, length(tags) as l, coalesce(tags, 'none') as tg from jobs where nodes between 4 and 8 limit 100
-- family: P10
select node, approx_percentile_cont(power_w, 0.9) as p90 from samples where bytes_rw = 0 group by node having count(*) > 20
select extract(hour from t) as h, stddev(temp_c) as sd, count(*) as n from samples group by 1 order by 1
