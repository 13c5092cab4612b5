-- Q1-Q8 shapes of the thesis (Table 5.4) on table `particles`, then a broader corpus.
select * from particles where x >= 0.7 and y < 0.3 and z <= 0.1
select * from particles where x >= 0.7 and power(vx, 2) + power(vy, 2) + power(vz, 2) <= 10591.0
select x, power(vx, 2) + power(vy, 2) + power(vz, 2) as square_of_velocity from particles where power(vx, 2) + power(vy, 2) + power(vz, 2) <= 1310.0
select * from particles where 3 + vx * 2 <= 100 or sqrt(abs(vy)) > 9
select * from (select * from particles where x >= 0.7 union all select * from particles where y < 0.3) where z <= 0.1
select count(id), min(x), max(x) from particles
select count(id) as c from particles group by particle_id & 15
select count(id) as c from particles where x >= 0.7 and y < 0.3 and z <= 0.1 group by particle_id
select * from particles where abs(vx) < 30
select id, vx from particles where -vx > 50 and vx * 2 + 10 < 0
select particle_id, x + y - z, vx - vy + vz from particles where x > 0.2 and y < 0.8 and z > 0.5
select * from particles where not (x < 0.9) or y between 0.1 and 0.12
select count(*) from particles where z > 0.25 and z <= 0.5
select particle_id & 7 as g, count(*) as n, avg(vx) as a, max(x) as m from particles where y < 0.4 group by g
select round(x, 1) as r, count(*) as n from particles where vz > 10 group by r
select * from particles where x < 0.3 order by vx limit 50
select x, y from particles where x in (0.5, 0.25) or y > 0.999
select sum(vx), min(vy), max(vz) from particles where abs(vx) > 90
select id from particles where power(x, 2) <= 0.04 or z * 3 < 0.2 or vz > 95
select particle_id, (vx + 1) * 2, (vy - 3) * 4 from particles where (vx + vy + vz) > 150
