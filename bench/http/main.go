// Workload for bench/bench.py: an HTTP server and client on loopback, so
// that tracing net/http (and the packages under it) gives a large,
// realistic set of probe sites and a per-request cost.
//
// Usage: http [N [WARMUP]]: WARMUP untimed requests, then N timed
// sequential requests alternating a GET and a POST, each with a small JSON
// body.  Prints "requests=N ns=T cpu_ns=C start_unix_ns=S end_unix_ns=E":
// the request loop's wall time as the program saw it (so the harness can
// subtract process start-up and the tracer's attach/detach, which are not
// per-request costs), the process CPU time over the same loop (client and
// server goroutines run on several threads, so the whole process is the
// unit here), and the wall-clock times at which main began and ended, from
// which the harness measures the tracer's start-up and shut-down as the
// user waits for them.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"
)

type item struct {
	ID    int      `json:"id"`
	Name  string   `json:"name"`
	Tags  []string `json:"tags"`
	Price float64  `json:"price"`
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func serve(ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("/item", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.URL.Query().Get("id"))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(item{ID: id, Name: "widget", Tags: []string{"a", "b"}, Price: 9.5})
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		var it item
		if err := json.NewDecoder(r.Body).Decode(&it); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		it.Price *= 2
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(it)
	})
	http.Serve(ln, mux)
}

// one request; the body is read to the end and closed so that the
// keep-alive connection is reused (one TCP connection for the whole loop).
func request(c *http.Client, base string, i int) error {
	var resp *http.Response
	var err error
	if i%2 == 0 {
		resp, err = c.Get(base + "/item?id=" + strconv.Itoa(i))
	} else {
		body, _ := json.Marshal(item{ID: i, Name: "gadget", Tags: []string{"x"}, Price: 1.25})
		resp, err = c.Post(base+"/echo", "application/json", bytes.NewReader(body))
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var it item
	if err := json.NewDecoder(resp.Body).Decode(&it); err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK || it.ID != i {
		return fmt.Errorf("request %d: status %d id %d", i, resp.StatusCode, it.ID)
	}
	return nil
}

func main() {
	startUnix := time.Now().UnixNano()
	n, warm := 200, 20
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 {
		warm, _ = strconv.Atoi(os.Args[2])
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go serve(ln)
	base := "http://" + ln.Addr().String()
	c := &http.Client{Timeout: 60 * time.Second}
	for i := 0; i < warm; i++ {
		if err := request(c, base, i); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	cpu0 := processCPU()
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := request(c, base, i); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	fmt.Printf("requests=%d ns=%d cpu_ns=%d start_unix_ns=%d end_unix_ns=%d\n", n, elapsed.Nanoseconds(),
		cpu.Nanoseconds(), startUnix, time.Now().UnixNano())
}
