-- Probe queries over colony.data.probes' events schema (events, users): a dictionary-encoded city,
-- a Zipf-distributed tag, decimals, zoned timestamps, dates, nulls, binary. See docs/query.md.
select city, count(*), sum(amount) from events where amount > 30 group by city
select city, count(*), sum(amount) from events where amount > 80 group by city
select count(*) from events where at >= timestamp '2024-06-01 00:00:00' and at < timestamp '2024-07-01 00:00:00'
select count(*) from events where day between date '2024-03-01' and date '2024-03-20'
select tag, count(*) as c from events group by tag order by c desc limit 10
select tag, avg(score) from events where tag like 't00%' group by tag
select u.tier, count(*), avg(e.amount) from events e join users u on e.user_id = u.user_id where e.ok group by u.tier
select u.tier, sum(e.price) from events e join users u on e.user_id = u.user_id where u.joined > date '2022-01-01' group by u.tier
select event_id, price * 2 as p2 from events where price > 900.00 and small < 0
select count(*) from events where amount is null
select date_trunc('month', at) as m, count(*) from events group by m order by m
select extract(hour from at) as h, max(amount) from events group by h
select count(distinct user_id) from events where city = 'Lima'
select count(*) from events where length(payload) > 3
select user_id, sum(amount) over (partition by city) from events where small > 95
select * from events where user_id in (select user_id from users where credit > 4990)
select count(*) from events e where not exists (select 1 from users u where u.user_id = e.user_id and u.tier = 'pro')
select cast(event_id as varchar) || city from events where small = 7
select city, avg(price), min(at) from events where city in ('Lima', 'Oslo', 'Perth') group by city
select upper(city) as c, count(*) from events where score > 1.5 group by c
select coalesce(amount, 0) as a, event_id from events where ok is null order by a desc limit 20
select count(*) filter (where ok), count(*) from events where small between -10 and 10
select tier, count(*) from users where joined < date '2021-06-01' group by tier union all select 'all', count(*) from users
select approx_percentile_cont(amount, 0.9) from events where city = 'Accra'
select city, approx_distinct(tag) from events group by city
select date_part('dow', day) as d, sum(price) from events group by d
select e.city, u.tier, count(*) from events e join users u on e.user_id = u.user_id where e.amount > 100 and u.credit < 1000 group by e.city, u.tier
select user_id, count(*) as n from events group by user_id having count(*) > 25
select event_id % 1000 as b, max(score) from events where payload = x'0101' group by b
select * from events order by at desc limit 5
