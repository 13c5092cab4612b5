-- A second set of shapes (nineteenth stop), written after the CASE/window/limit changes to
-- check them on queries not used to make them: 10 families x 4 queries. Its V9 (a LIMIT of up
-- to 94k rows under an aggregate) then showed the per-row LIMIT count, changed after it (the
-- change was judged by the calibration's own cross-validation, not by this set).
-- family: V1 held-out
select particle_id % 7 as g, dense_rank() over (partition by particle_id % 3 order by vx desc) as r from particles where z < 0.402
select particle_id % 4 as g, dense_rank() over (partition by particle_id % 5 order by vx desc) as r from particles where z < 0.254
select particle_id % 6 as g, dense_rank() over (partition by particle_id % 4 order by vx desc) as r from particles where z < 0.485
select particle_id % 6 as g, dense_rank() over (partition by particle_id % 8 order by vx desc) as r from particles where z < 0.148
-- family: V2 held-out
select case when vx > 15.3 then 'fast' when vx > -78.1 then 'mid' else 'slow' end as band, avg(x) as ax, count(*) as n from particles where y < 0.925 group by band
select case when vx > 42.0 then 'fast' when vx > -64.6 then 'mid' else 'slow' end as band, avg(x) as ax, count(*) as n from particles where y < 0.765 group by band
select case when vx > 1.5 then 'fast' when vx > -57.0 then 'mid' else 'slow' end as band, avg(x) as ax, count(*) as n from particles where y < 0.536 group by band
select case when vx > -16.1 then 'fast' when vx > -78.9 then 'mid' else 'slow' end as band, avg(x) as ax, count(*) as n from particles where y < 0.370 group by band
-- family: V3 held-out
select id, x, y from particles where x + y < 0.812 limit 279
select id, x, y from particles where x + y < 1.012 limit 1295
select id, x, y from particles where x + y < 0.069 limit 1400
select id, x, y from particles where x + y < 0.580 limit 1345
-- family: V4 held-out
select sum(case when x < 0.256 then vx else 0 end) as s, count(*) from particles where z > 0.556
select sum(case when x < 0.448 then vx else 0 end) as s, count(*) from particles where z > 0.305
select sum(case when x < 0.268 then vx else 0 end) as s, count(*) from particles where z > 0.793
select sum(case when x < 0.738 then vx else 0 end) as s, count(*) from particles where z > 0.566
-- family: V5 held-out
select id, sum(vz) over (partition by particle_id) as t from particles where x < 0.151
select id, sum(vz) over (partition by particle_id) as t from particles where x < 0.380
select id, sum(vz) over (partition by particle_id) as t from particles where x < 0.234
select id, sum(vz) over (partition by particle_id) as t from particles where x < 0.184
-- family: V6 held-out
select count(*) from particles where particle_id in (270134, 1243, 95802, 122510, 208798, 123569, 94146, 23506, 78465, 31717, 210252, 128347, 68367, 162018, 147933, 141828, 174008, 187993)
select count(*) from particles where particle_id in (46508, 219372, 291792, 164544, 135239, 186450, 10394, 111643, 107625)
select count(*) from particles where particle_id in (223191, 148448, 256734, 140991, 10196, 202691, 239420, 173153, 281260, 124881, 239134, 540, 11693, 238209, 262005, 155815, 225815, 97963)
select count(*) from particles where particle_id in (149986, 91072, 28033, 52398, 271411, 133145, 296920, 105862, 17620, 76863, 107469, 210303, 219019, 221088, 94271, 114003, 170114, 181890, 124971, 57061, 232263, 156226, 287539, 283831, 266518, 288227, 186280, 89471, 48082)
-- family: V7 held-out
select greatest(x, y) as m, least(vx, vy) as l from particles where z between 0.568 and 0.597
select greatest(x, y) as m, least(vx, vy) as l from particles where z between 0.179 and 0.306
select greatest(x, y) as m, least(vx, vy) as l from particles where z between 0.403 and 0.608
select greatest(x, y) as m, least(vx, vy) as l from particles where z between 0.056 and 0.081
-- family: V8 held-out
select particle_id, max(x) - min(x) as span from particles where vy < 16.7 group by particle_id order by span desc limit 467
select particle_id, max(x) - min(x) as span from particles where vy < 16.2 group by particle_id order by span desc limit 248
select particle_id, max(x) - min(x) as span from particles where vy < 10.2 group by particle_id order by span desc limit 288
select particle_id, max(x) - min(x) as span from particles where vy < 66.9 group by particle_id order by span desc limit 445
-- family: V9 held-out
select count(*), avg(x) from (select * from particles where vx > -73.1 limit 26247) t
select count(*), avg(x) from (select * from particles where vx > -19.1 limit 94269) t
select count(*), avg(x) from (select * from particles where vx > -32.5 limit 8677) t
select count(*), avg(x) from (select * from particles where vx > -40.9 limit 66301) t
-- family: V10 held-out
select id from particles where x < 0.463 except select id from particles where y < 0.155
select id from particles where x < 0.320 except select id from particles where y < 0.416
select id from particles where x < 0.111 except select id from particles where y < 0.327
select id from particles where x < 0.231 except select id from particles where y < 0.395
