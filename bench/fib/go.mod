module example.com/benchfib

go 1.19
