module example.com/benchhttp

go 1.19
