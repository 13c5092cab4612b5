-- Probe queries over colony.data.probes' nested schema (obs, as pandas writes it): a categorical,
-- nanosecond timestamps, struct and list columns. See docs/query.md.
select kind, count(*), avg(v) from obs where kind in ('a', 'b') group by kind
select id, v from obs where at > timestamp '2025-01-06 00:00:00' and v > 2
select cast(at as date) as d, count(*) from obs group by d
select id, pt from obs where v < -2.5
select count(*) from obs where array_length(hits) > 1 and kind = 'c'
select kind, max(v) from (select kind, v, row_number() over (partition by kind order by v desc) as r from obs) where r <= 5 group by kind
