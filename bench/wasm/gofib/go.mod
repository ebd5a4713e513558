module calltrace.bench/gofib

go 1.19
