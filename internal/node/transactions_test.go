package node

import (
	"context"
	"testing"
	"time"
)

func TestTransactionsWait(t *testing.T) {
	var tx Transactions
	if tx.wait(context.Background()) {
		t.Fatal("waited with no transaction running")
	}
	before, running := tx.mark()
	if running {
		t.Fatal("running before any began")
	}
	end1, end2 := tx.Begin(), tx.Begin()
	if now, running := tx.mark(); now != before+2 || !running {
		t.Fatalf("two begun: mark %d running %v, want %d running", now, running, before+2)
	}
	returned := make(chan bool)
	go func() { returned <- tx.wait(context.Background()) }()
	end1()
	end1() // ending twice ends once
	select {
	case <-returned:
		t.Fatal("returned while a transaction still ran")
	case <-time.After(50 * time.Millisecond):
	}
	end2()
	if waited := <-returned; !waited {
		t.Fatal("said nothing ran")
	}
	// A new transaction after all ended is waited for again.
	end3 := tx.Begin()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if !tx.wait(ctx) {
		t.Fatal("a transaction ran: waited, until ctx ended")
	}
	end3()
	if tx.wait(context.Background()) {
		t.Fatal("waited after every transaction ended")
	}
}

// TestTransactionsExpect: a pass expected is waited for as a transaction until it is over,
// or until its bound passed.
func TestTransactionsExpect(t *testing.T) {
	var tx Transactions
	over := tx.Expect(time.Hour)
	if _, running := tx.mark(); !running {
		t.Fatal("the expected pass is not waited for")
	}
	over()
	over() // over twice is over once
	if tx.wait(context.Background()) {
		t.Fatal("waited after the pass was over")
	}
	tx.Expect(20 * time.Millisecond) // never said over
	start := time.Now()
	if !tx.wait(context.Background()) {
		t.Fatal("did not wait for the expected pass")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("waited %v for a pass bounded by 20ms", took)
	}
}
