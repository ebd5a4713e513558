module example.com/benchfibpar

go 1.19
