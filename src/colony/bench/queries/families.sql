-- Decision-engine benchmark: particle query families (colony.bench.query_families).
-- 8 calibration families, 6 held out; 16 queries each.
-- family: T1
select * from particles where x >= 0.566 and y < 0.245 and z <= 0.401
select * from particles where x >= 0.118 and y < 0.401 and z <= 0.607
select * from particles where x >= 0.721 and y < 0.824 and z <= 0.321
select * from particles where x >= 0.070 and y < 0.091 and z <= 0.693
select * from particles where x >= 0.283 and y < 0.445 and z <= 0.849
select * from particles where x >= 0.404 and y < 0.176 and z <= 0.758
select * from particles where x >= 0.420 and y < 0.683 and z <= 0.882
select * from particles where x >= 0.231 and y < 0.170 and z <= 0.405
select * from particles where x >= 0.863 and y < 0.239 and z <= 0.597
select * from particles where x >= 0.369 and y < 0.415 and z <= 0.831
select * from particles where x >= 0.872 and y < 0.708 and z <= 0.039
select * from particles where x >= 0.602 and y < 0.114 and z <= 0.396
select * from particles where x >= 0.201 and y < 0.904 and z <= 0.234
select * from particles where x >= 0.955 and y < 0.208 and z <= 0.383
select * from particles where x >= 0.078 and y < 0.115 and z <= 0.973
select * from particles where x >= 0.566 and y < 0.637 and z <= 0.367
-- family: T5
select count(*) from particles where x < 0.887
select count(*) from particles where x < 0.957
select count(*) from particles where x < 0.221
select count(*) from particles where x < 0.687
select count(*) from particles where x < 0.453
select count(*) from particles where x < 0.479
select count(*) from particles where x < 0.412
select count(*) from particles where x < 0.424
select count(*) from particles where x < 0.446
select count(*) from particles where x < 0.025
select count(*) from particles where x < 0.807
select count(*) from particles where x < 0.624
select count(*) from particles where x < 0.166
select count(*) from particles where x < 0.066
select count(*) from particles where x < 0.661
select count(*) from particles where x < 0.504
-- family: T6
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.407
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.118
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.902
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.781
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.162
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.306
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.262
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.856
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.467
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.910
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.201
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.376
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.044
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.703
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.968
select particle_id, power(vx, 2) + power(vy, 2) + power(vz, 2) from particles where x >= 0.510
-- family: T11
select particle_id & 15 as g, count(*), avg(vx), max(x) from particles where y < 0.273 group by g
select particle_id & 3 as g, count(*), avg(vx), max(x) from particles where y < 0.240 group by g
select particle_id & 3 as g, count(*), avg(vx), max(x) from particles where y < 0.653 group by g
select particle_id & 255 as g, count(*), avg(vx), max(x) from particles where y < 0.792 group by g
select particle_id & 4095 as g, count(*), avg(vx), max(x) from particles where y < 0.683 group by g
select particle_id & 15 as g, count(*), avg(vx), max(x) from particles where y < 0.610 group by g
select particle_id & 4095 as g, count(*), avg(vx), max(x) from particles where y < 0.816 group by g
select particle_id & 4095 as g, count(*), avg(vx), max(x) from particles where y < 0.128 group by g
select particle_id & 3 as g, count(*), avg(vx), max(x) from particles where y < 0.186 group by g
select particle_id & 7 as g, count(*), avg(vx), max(x) from particles where y < 0.498 group by g
select particle_id & 255 as g, count(*), avg(vx), max(x) from particles where y < 0.107 group by g
select particle_id & 15 as g, count(*), avg(vx), max(x) from particles where y < 0.947 group by g
select particle_id & 15 as g, count(*), avg(vx), max(x) from particles where y < 0.406 group by g
select particle_id & 4095 as g, count(*), avg(vx), max(x) from particles where y < 0.665 group by g
select particle_id & 15 as g, count(*), avg(vx), max(x) from particles where y < 0.357 group by g
select particle_id & 3 as g, count(*), avg(vx), max(x) from particles where y < 0.165 group by g
-- family: T12
select * from particles where x < 0.910 order by vx limit 535
select * from particles where x < 0.961 order by vx limit 572
select * from particles where x < 0.682 order by vx limit 259
select * from particles where x < 0.503 order by vx limit 182
select * from particles where x < 0.734 order by vx limit 413
select * from particles where x < 0.795 order by vx limit 287
select * from particles where x < 0.455 order by vx limit 466
select * from particles where x < 0.869 order by vx limit 115
select * from particles where x < 0.943 order by vx limit 179
select * from particles where x < 0.332 order by vx limit 192
select * from particles where x < 0.559 order by vx limit 360
select * from particles where x < 0.855 order by vx limit 310
select * from particles where x < 0.264 order by vx limit 888
select * from particles where x < 0.604 order by vx limit 774
select * from particles where x < 0.944 order by vx limit 418
select * from particles where x < 0.974 order by vx limit 461
-- family: T14
select round(x, 2) as r, count(*) from particles where vz > -28.72 group by r
select round(x, 2) as r, count(*) from particles where vz > -55.43 group by r
select round(x, 2) as r, count(*) from particles where vz > 7.10 group by r
select round(x, 2) as r, count(*) from particles where vz > 13.54 group by r
select round(x, 2) as r, count(*) from particles where vz > 19.21 group by r
select round(x, 2) as r, count(*) from particles where vz > -9.25 group by r
select round(x, 2) as r, count(*) from particles where vz > 68.40 group by r
select round(x, 2) as r, count(*) from particles where vz > -56.57 group by r
select round(x, 2) as r, count(*) from particles where vz > -91.21 group by r
select round(x, 2) as r, count(*) from particles where vz > 13.19 group by r
select round(x, 2) as r, count(*) from particles where vz > 50.09 group by r
select round(x, 2) as r, count(*) from particles where vz > 92.61 group by r
select round(x, 2) as r, count(*) from particles where vz > 27.39 group by r
select round(x, 2) as r, count(*) from particles where vz > -38.93 group by r
select round(x, 2) as r, count(*) from particles where vz > -67.28 group by r
select round(x, 2) as r, count(*) from particles where vz > 70.80 group by r
-- family: T17
select particle_id, count(*), sum(vx) from particles where x < 0.187 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.794 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.130 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.329 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.211 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.076 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.325 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.222 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.628 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.655 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.856 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.803 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.515 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.211 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.973 group by particle_id
select particle_id, count(*), sum(vx) from particles where x < 0.843 group by particle_id
-- family: T21
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.755 and b.y < 0.489
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.716 and b.y < 0.500
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.942 and b.y < 0.114
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.672 and b.y < 0.107
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.925 and b.y < 0.404
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.822 and b.y < 0.945
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.779 and b.y < 0.047
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.672 and b.y < 0.728
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.722 and b.y < 0.354
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.652 and b.y < 0.622
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.246 and b.y < 0.401
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.854 and b.y < 0.113
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.805 and b.y < 0.200
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.514 and b.y < 0.275
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.691 and b.y < 0.759
select a.id, b.x from particles a join particles b on a.id = b.id where a.x < 0.974 and b.y < 0.955
-- family: H1 held-out
select particle_id % 7 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.410 and 0.904 group by g having count(*) > 5
select particle_id % 8 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.773 and 0.805 group by g having count(*) > 15
select particle_id % 9 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.209 and 0.746 group by g having count(*) > 5
select particle_id % 2 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.333 and 0.927 group by g having count(*) > 5
select particle_id % 2 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.167 and 0.732 group by g having count(*) > 3
select particle_id % 16 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.428 and 0.512 group by g having count(*) > 18
select particle_id % 16 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.200 and 0.612 group by g having count(*) > 8
select particle_id % 2 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.346 and 0.616 group by g having count(*) > 12
select particle_id % 5 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.126 and 0.742 group by g having count(*) > 2
select particle_id % 4 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.306 and 0.819 group by g having count(*) > 19
select particle_id % 14 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.529 and 0.992 group by g having count(*) > 5
select particle_id % 14 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.804 and 0.757 group by g having count(*) > 19
select particle_id % 3 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.104 and 0.637 group by g having count(*) > 8
select particle_id % 15 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.190 and 0.737 group by g having count(*) > 11
select particle_id % 2 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.107 and 0.653 group by g having count(*) > 11
select particle_id % 1 as g, sum(case when vx > 0 then 1 else 0 end) as pos, max(vz) - min(vz) as r from particles where x between 0.564 and 0.997 group by g having count(*) > 1
-- family: H2 held-out
select distinct particle_id & 4095 as g from particles where exp(x) > 1.959
select distinct particle_id & 255 as g from particles where exp(x) > 2.624
select distinct particle_id & 255 as g from particles where exp(x) > 2.410
select distinct particle_id & 3 as g from particles where exp(x) > 1.152
select distinct particle_id & 7 as g from particles where exp(x) > 1.488
select distinct particle_id & 7 as g from particles where exp(x) > 2.355
select distinct particle_id & 3 as g from particles where exp(x) > 1.151
select distinct particle_id & 7 as g from particles where exp(x) > 1.473
select distinct particle_id & 255 as g from particles where exp(x) > 1.356
select distinct particle_id & 15 as g from particles where exp(x) > 1.261
select distinct particle_id & 15 as g from particles where exp(x) > 1.903
select distinct particle_id & 7 as g from particles where exp(x) > 1.126
select distinct particle_id & 7 as g from particles where exp(x) > 1.480
select distinct particle_id & 15 as g from particles where exp(x) > 2.011
select distinct particle_id & 7 as g from particles where exp(x) > 1.579
select distinct particle_id & 3 as g from particles where exp(x) > 2.090
-- family: H3 held-out
select id, ln(1 + abs(vx)) as l from particles where y < 0.808 order by l desc, id limit 713 offset 2
select id, ln(1 + abs(vx)) as l from particles where y < 0.874 order by l desc, id limit 447 offset 16
select id, ln(1 + abs(vx)) as l from particles where y < 0.671 order by l desc, id limit 674 offset 47
select id, ln(1 + abs(vx)) as l from particles where y < 0.789 order by l desc, id limit 245 offset 6
select id, ln(1 + abs(vx)) as l from particles where y < 0.684 order by l desc, id limit 934 offset 72
select id, ln(1 + abs(vx)) as l from particles where y < 0.964 order by l desc, id limit 620 offset 60
select id, ln(1 + abs(vx)) as l from particles where y < 0.937 order by l desc, id limit 186 offset 89
select id, ln(1 + abs(vx)) as l from particles where y < 0.287 order by l desc, id limit 547 offset 99
select id, ln(1 + abs(vx)) as l from particles where y < 0.143 order by l desc, id limit 418 offset 57
select id, ln(1 + abs(vx)) as l from particles where y < 0.319 order by l desc, id limit 848 offset 31
select id, ln(1 + abs(vx)) as l from particles where y < 0.567 order by l desc, id limit 166 offset 38
select id, ln(1 + abs(vx)) as l from particles where y < 0.173 order by l desc, id limit 93 offset 55
select id, ln(1 + abs(vx)) as l from particles where y < 0.569 order by l desc, id limit 649 offset 15
select id, ln(1 + abs(vx)) as l from particles where y < 0.349 order by l desc, id limit 187 offset 98
select id, ln(1 + abs(vx)) as l from particles where y < 0.506 order by l desc, id limit 381 offset 67
select id, ln(1 + abs(vx)) as l from particles where y < 0.888 order by l desc, id limit 544 offset 71
-- family: H4 held-out
select count(*) from particles where id in (select id from particles where vx > -20.18) and x < 0.430
select count(*) from particles where id in (select id from particles where vx > -5.38) and x < 0.552
select count(*) from particles where id in (select id from particles where vx > -74.16) and x < 0.677
select count(*) from particles where id in (select id from particles where vx > -91.21) and x < 0.121
select count(*) from particles where id in (select id from particles where vx > 64.18) and x < 0.557
select count(*) from particles where id in (select id from particles where vx > 85.20) and x < 0.214
select count(*) from particles where id in (select id from particles where vx > -71.68) and x < 0.579
select count(*) from particles where id in (select id from particles where vx > 71.55) and x < 0.909
select count(*) from particles where id in (select id from particles where vx > -7.42) and x < 0.909
select count(*) from particles where id in (select id from particles where vx > -35.76) and x < 0.788
select count(*) from particles where id in (select id from particles where vx > 4.05) and x < 0.928
select count(*) from particles where id in (select id from particles where vx > 1.36) and x < 0.028
select count(*) from particles where id in (select id from particles where vx > 17.49) and x < 0.813
select count(*) from particles where id in (select id from particles where vx > 57.08) and x < 0.032
select count(*) from particles where id in (select id from particles where vx > 12.53) and x < 0.310
select count(*) from particles where id in (select id from particles where vx > -44.83) and x < 0.783
-- family: H5 held-out
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 1.0 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 8.3 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 95.6 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 75.7 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 70.1 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 70.5 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 53.6 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 62.7 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 9.3 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 60.5 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 92.3 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 57.2 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 65.3 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 86.8 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 50.8 group by particle_id
select particle_id, avg(vx * vx + vy * vy) as e, stddev(vz) as s from particles where abs(vz) < 10.1 group by particle_id
-- family: H6 held-out
select id, sin(vz) as s, x, y from particles where id >= 3421
select id, sin(vz) as s, x, y from particles where id >= 57756
select id, sin(vz) as s, x, y from particles where id >= 458994
select id, sin(vz) as s, x, y from particles where id >= 757930
select id, sin(vz) as s, x, y from particles where id >= 12562
select id, sin(vz) as s, x, y from particles where id >= 127065
select id, sin(vz) as s, x, y from particles where id >= 121775
select id, sin(vz) as s, x, y from particles where id >= 77246
select id, sin(vz) as s, x, y from particles where id >= 132603
select id, sin(vz) as s, x, y from particles where id >= 7284
select id, sin(vz) as s, x, y from particles where id >= 133627
select id, sin(vz) as s, x, y from particles where id >= 42679
select id, sin(vz) as s, x, y from particles where id >= 2741
select id, sin(vz) as s, x, y from particles where id >= 52593
select id, sin(vz) as s, x, y from particles where id >= 797346
select id, sin(vz) as s, x, y from particles where id >= 1619
