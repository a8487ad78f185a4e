module github.com/readyline/readyline

go 1.26
