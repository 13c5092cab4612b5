-- Query shapes no calibration template had (nineteenth stop): 14 families x 4 queries on the
-- particle schema (windows, CASE keys, BETWEEN, count distinct, union all, subqueries, HAVING,
-- floor keys, NOT/OR, streaming LIMIT, median/var_pop, lag, DISTINCT, EXISTS). Written to try
-- the engine as a new user would; it found the CASE, window and limit gaps fixed that stop, so
-- it is no longer unseen. Run: colony bench query --queries THIS --rows 300000
-- family: U1 held-out
select id, x, row_number() over (partition by particle_id order by x) as r from particles where y < 0.718
select id, x, row_number() over (partition by particle_id order by x) as r from particles where y < 0.518
select id, x, row_number() over (partition by particle_id order by x) as r from particles where y < 0.257
select id, x, row_number() over (partition by particle_id order by x) as r from particles where y < 0.334
-- family: U2 held-out
select case when x < 0.355 then 1 else 2 end as k, count(*) as n, avg(vy) as a from particles group by k
select case when x < 0.412 then 1 else 2 end as k, count(*) as n, avg(vy) as a from particles group by k
select case when x < 0.741 then 1 else 2 end as k, count(*) as n, avg(vy) as a from particles group by k
select case when x < 0.173 then 1 else 2 end as k, count(*) as n, avg(vy) as a from particles group by k
-- family: U3 held-out
select count(*) from particles where x between 0.187 and 0.593 and vz between -68.5 and 68.5
select count(*) from particles where x between 0.302 and 0.411 and vz between -33.0 and 33.0
select count(*) from particles where x between 0.435 and 0.926 and vz between -63.9 and 63.9
select count(*) from particles where x between 0.080 and 0.526 and vz between -15.4 and 15.4
-- family: U4 held-out
select count(distinct particle_id) from particles where y < 0.355
select count(distinct particle_id) from particles where y < 0.368
select count(distinct particle_id) from particles where y < 0.399
select count(distinct particle_id) from particles where y < 0.154
-- family: U5 held-out
select id from particles where x < 0.109 union all select id from particles where y < 0.382
select id from particles where x < 0.056 union all select id from particles where y < 0.209
select id from particles where x < 0.021 union all select id from particles where y < 0.242
select id from particles where x < 0.062 union all select id from particles where y < 0.036
-- family: U6 held-out
select avg(e), max(e) from (select vx * vx + vz * vz as e from particles where z < 0.781) t
select avg(e), max(e) from (select vx * vx + vz * vz as e from particles where z < 0.236) t
select avg(e), max(e) from (select vx * vx + vz * vz as e from particles where z < 0.780) t
select avg(e), max(e) from (select vx * vx + vz * vz as e from particles where z < 0.292) t
-- family: U7 held-out
select particle_id, count(*) as c from particles where x < 0.800 group by particle_id having count(*) > 2
select particle_id, count(*) as c from particles where x < 0.703 group by particle_id having count(*) > 2
select particle_id, count(*) as c from particles where x < 0.931 group by particle_id having count(*) > 3
select particle_id, count(*) as c from particles where x < 0.673 group by particle_id having count(*) > 1
-- family: U8 held-out
select floor(x * 25) as b, min(vx) as lo, max(vx) as hi from particles group by b order by b
select floor(x * 21) as b, min(vx) as lo, max(vx) as hi from particles group by b order by b
select floor(x * 149) as b, min(vx) as lo, max(vx) as hi from particles group by b order by b
select floor(x * 95) as b, min(vx) as lo, max(vx) as hi from particles group by b order by b
-- family: U9 held-out
select count(*) from particles where not (x < 0.229 or y > 0.713)
select count(*) from particles where not (x < 0.186 or y > 0.456)
select count(*) from particles where not (x < 0.157 or y > 0.478)
select count(*) from particles where not (x < 0.809 or y > 0.716)
-- family: U10 held-out
select * from particles where vx > 16.4 and z < 0.837 limit 1163
select * from particles where vx > -13.8 and z < 0.214 limit 2454
select * from particles where vx > 64.5 and z < 0.220 limit 3930
select * from particles where vx > 70.7 and z < 0.307 limit 3245
-- family: U11 held-out
select median(vx) as m, var_pop(vy) as v from particles where x < 0.727
select median(vx) as m, var_pop(vy) as v from particles where x < 0.155
select median(vx) as m, var_pop(vy) as v from particles where x < 0.083
select median(vx) as m, var_pop(vy) as v from particles where x < 0.658
-- family: U12 held-out
select id, vx - lag(vx) over (order by id) as dv from particles where y < 0.135
select id, vx - lag(vx) over (order by id) as dv from particles where y < 0.286
select id, vx - lag(vx) over (order by id) as dv from particles where y < 0.281
select id, vx - lag(vx) over (order by id) as dv from particles where y < 0.230
-- family: U13 held-out
select distinct particle_id % 4093 as g from particles where z > 0.666
select distinct particle_id % 3912 as g from particles where z > 0.732
select distinct particle_id % 3942 as g from particles where z > 0.912
select distinct particle_id % 1526 as g from particles where z > 0.757
-- family: U14 held-out
select count(*) from particles a where exists (select 1 from particles b where b.id = a.id and b.x < 0.802) and a.vy > -75.2
select count(*) from particles a where exists (select 1 from particles b where b.id = a.id and b.x < 0.268) and a.vy > -29.3
select count(*) from particles a where exists (select 1 from particles b where b.id = a.id and b.x < 0.843) and a.vy > 8.7
select count(*) from particles a where exists (select 1 from particles b where b.id = a.id and b.x < 0.660) and a.vy > 1.1
