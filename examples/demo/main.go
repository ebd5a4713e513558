// The bundled example that `make demo` traces: a tiny order pipeline with
// goroutines, recursion, an error path and a recovered panic, so the tree
// shows what calltrace sees in a real Go program.
package main

import (
	"errors"
	"fmt"
	"sync"
)

type Order struct {
	ID    int
	Items []string
}

var errEmpty = errors.New("empty order")

//go:noinline
func validate(o Order) error {
	if len(o.Items) == 0 {
		return errEmpty
	}
	return nil
}

//go:noinline
func price(item string) int {
	return len(item) * 100
}

//go:noinline
func total(o Order) int {
	t := 0
	for _, it := range o.Items {
		t += price(it)
	}
	return t
}

//go:noinline
func discount(level int) int {
	if level == 0 {
		return 0
	}
	return 5 + discount(level-1)
}

//go:noinline
func ship(o Order) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	if o.ID%3 == 0 {
		panic("no courier")
	}
	return true
}

//go:noinline
func process(o Order) string {
	if err := validate(o); err != nil {
		return fmt.Sprintf("order %d: %v", o.ID, err)
	}
	sum := total(o) * (100 - discount(2)) / 100
	return fmt.Sprintf("order %d: %d cents, shipped=%v", o.ID, sum, ship(o))
}

func main() {
	orders := []Order{{1, []string{"tea", "cake"}}, {2, nil}, {3, []string{"pie"}}}
	results := make([]string, len(orders))
	var wg sync.WaitGroup
	for i, o := range orders {
		wg.Add(1)
		go func(i int, o Order) {
			defer wg.Done()
			results[i] = process(o)
		}(i, o)
	}
	wg.Wait()
	for _, r := range results {
		fmt.Println(r)
	}
}
