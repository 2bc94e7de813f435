//go:build bench

package bench

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"idp-mockserver/clients/go/mocktest"
)

func TestMain(m *testing.M) { os.Exit(mocktest.Main(m)) }

// TestFreshSandboxMedian runs N tests one after the other (BENCH_RUNS, default 100), each of which only
// gets a fresh sandbox through the harness; a test's time is from before t.Run to after it returned,
// its clean-up (the delete) included. It prints the median, and the fastest, 90th percentile and slowest.
func TestFreshSandboxMedian(t *testing.T) {
	runs := 100
	if n, err := strconv.Atoi(os.Getenv("BENCH_RUNS")); err == nil && n > 0 {
		runs = n
	}
	mock := mocktest.Server(t)
	for i := 0; i < 5; i++ { // warm up: connections, the server's first sandboxes
		t.Run("warm-up", func(t *testing.T) { mocktest.SandboxOn(t, mock) })
	}
	durations := make([]time.Duration, 0, runs)
	for i := 0; i < runs; i++ {
		start := time.Now()
		t.Run("fresh-sandbox", func(t *testing.T) {
			if h := mocktest.SandboxOn(t, mock); h.SandboxName() == "" {
				t.Fatal("no sandbox")
			}
		})
		durations = append(durations, time.Since(start))
	}
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
	median := durations[len(durations)/2]
	if len(durations)%2 == 0 {
		median = (durations[len(durations)/2-1] + durations[len(durations)/2]) / 2
	}
	fmt.Printf("fresh sandbox per test (create + delete through mocktest.Sandbox), %d runs against %s:\n"+
		"  median %s   min %s   p90 %s   max %s\n", runs, mock.Root(), ms(median), ms(durations[0]),
		ms(durations[len(durations)*9/10]), ms(durations[len(durations)-1]))
}
