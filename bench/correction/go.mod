module example.com/correction

go 1.19
