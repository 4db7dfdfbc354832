package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// interrupt is the first SIGINT or SIGTERM rwc received, if any.
type interrupt struct{ sig atomic.Value }

// code is the exit status of a command the signal interrupted (0: none
// came): 128 + the signal's number, as a shell reports a process the
// signal killed, so a CI job cancelled while rwc ran reads as cancelled:
// 130 for SIGINT, 143 for SIGTERM.
func (in *interrupt) code() int {
	s, ok := in.sig.Load().(syscall.Signal)
	if !ok {
		return 0
	}
	return 128 + int(s)
}

// catchInterrupts makes the first SIGINT or SIGTERM cancel the returned
// context, which cancels the running statement on the server and rolls
// its refresh back (the command then says what had committed), and a
// second one exit at once through exit: the server ends what was running
// when it finds the connection gone (client_connection_check_interval,
// within about a second). stop ends it; restore: the default handling
// comes back (for a process that goes on; one about to exit need not).
func catchInterrupts(stderr io.Writer, exit func(int)) (ctx context.Context, in *interrupt, stop func(restore bool)) {
	ctx, cancel := context.WithCancel(context.Background())
	in = &interrupt{}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-signals:
			in.sig.Store(s)
			fmt.Fprintf(stderr, "rwc: %s: cancelling the running statement and rolling back its refresh (send it again to exit at once)\n", signalName(s))
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-signals:
			fmt.Fprintf(stderr, "rwc: %s again: exiting at once; the server rolls back what was running, and releases its locks, within about a second\n", signalName(s))
			exit(in.code())
		case <-done:
		}
	}()
	return ctx, in, func(restore bool) {
		if restore {
			signal.Stop(signals)
		}
		close(done)
		cancel()
	}
}

func signalName(s os.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}
