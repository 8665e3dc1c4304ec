// Drain / latency peer on github.com/apache/rocketmq-client-go/v2's push consumer, for bench/run.sh.
//
//	gopeer --namesrv ADDR --topic T --group G --expect N [--threads 20] [--batch 32]
//	       [--latency-skip K] [--timeout-s 600]
//
// Fresh group, ConsumeFromFirstOffset, no-op listener, 20 consume goroutines, pull batch 32,
// consume batch 1. Prints READY once started and one `RESULT {json}` line at the end (same
// protocol as the Java and Rust peers; see bench/README.md).
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func percentile(sorted []int64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	idx := int(math.Ceil(p * float64(n)))
	if idx < 1 {
		idx = 1
	}
	if idx > n {
		idx = n
	}
	return float64(sorted[idx-1]) / 1000.0
}

func main() {
	namesrv := flag.String("namesrv", envOr("NAMESRV_ADDR", "127.0.0.1:9876"), "name server address")
	topic := flag.String("topic", "", "topic")
	group := flag.String("group", "", "consumer group (fresh)")
	expect := flag.Int64("expect", 0, "messages to receive")
	threads := flag.Int("threads", 20, "consume goroutines")
	batch := flag.Int("batch", 32, "pull batch size")
	latencySkip := flag.Int64("latency-skip", -1, "record latency for sequence numbers >= this (-1: off)")
	timeoutS := flag.Int64("timeout-s", 600, "give up after this many seconds")
	flag.Parse()
	if *topic == "" || *group == "" || *expect <= 0 {
		fmt.Fprintln(os.Stderr, "go-peer: --topic, --group and --expect are required")
		os.Exit(2)
	}
	rlog.SetLogLevel("error")

	var count atomic.Int64
	var mu sync.Mutex
	var first, last time.Time
	latencies := make([]int64, 0, 1<<16)
	storeDelays := make([]int64, 0, 1<<16) // store timestamp - born timestamp, µs
	done := make(chan struct{})
	var once sync.Once

	c, err := rocketmq.NewPushConsumer(
		consumer.WithGroupName(*group),
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{*namesrv})),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumeGoroutineNums(*threads),
		consumer.WithPullBatchSize(int32(*batch)),
		consumer.WithConsumeMessageBatchMaxSize(1),
		consumer.WithInstance(fmt.Sprintf("bench-%d", os.Getpid())),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-peer: new consumer:", err)
		os.Exit(1)
	}
	err = c.Subscribe(*topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		now := time.Now()
		mu.Lock()
		if *latencySkip >= 0 {
			recv := now.UnixMicro()
			for _, m := range msgs {
				if len(m.Body) >= 16 {
					sent := int64(binary.BigEndian.Uint64(m.Body[0:8]))
					seq := int64(binary.BigEndian.Uint64(m.Body[8:16]))
					if seq >= *latencySkip {
						d := recv - sent
						if d < 0 {
							d = 0
						}
						latencies = append(latencies, d)
						s := m.StoreTimestamp - m.BornTimestamp
						if s < 0 {
							s = 0
						}
						storeDelays = append(storeDelays, s*1000)
					}
				}
			}
		}
		if first.IsZero() {
			first = now
		}
		last = now
		mu.Unlock()
		if count.Add(int64(len(msgs))) >= *expect {
			once.Do(func() { close(done) })
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-peer: subscribe:", err)
		os.Exit(1)
	}
	started := time.Now()
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "go-peer: start:", err)
		os.Exit(1)
	}
	fmt.Println("READY")

	timedOut := false
	select {
	case <-done:
	case <-time.After(time.Duration(*timeoutS) * time.Second):
		timedOut = true
	}
	mu.Lock()
	f, l := first, last
	lat := append([]int64(nil), latencies...)
	store := append([]int64(nil), storeDelays...)
	mu.Unlock()
	elapsed, startup := 0.0, 0.0
	if !f.IsZero() {
		elapsed = l.Sub(f).Seconds()
		startup = f.Sub(started).Seconds()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	sort.Slice(store, func(i, j int) bool { return store[i] < store[j] })
	fmt.Printf("RESULT {\"client\":\"go-push\",\"count\":%d,\"elapsed_s\":%.6f,\"startup_s\":%.6f,\"timeout\":%t,"+
		"\"latency_samples\":%d,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"max_ms\":%.3f,"+
		"\"store_delay_samples\":%d,\"store_delay_p50_ms\":%.3f,\"store_delay_p99_ms\":%.3f,\"store_delay_max_ms\":%.3f}\n",
		count.Load(), elapsed, startup, timedOut, len(lat),
		percentile(lat, 0.50), percentile(lat, 0.99), percentile(lat, 0.999), percentile(lat, 1.0),
		len(store), percentile(store, 0.50), percentile(store, 0.99), percentile(store, 1.0))
	os.Stdout.Sync()
	shut := make(chan struct{})
	go func() { _ = c.Shutdown(); close(shut) }()
	select {
	case <-shut:
	case <-time.After(5 * time.Second):
	}
	os.Exit(0)
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}
