package main

import "testing"

// Colours only on a terminal, and never with --no-color or NO_COLOR set to
// anything but "" (https://no-color.org).
func TestUseColor(t *testing.T) {
	for _, c := range []struct {
		noColor bool
		env     string
		tty     bool
		want    bool
	}{
		{false, "", true, true},
		{true, "", true, false},
		{false, "1", true, false},
		{false, "false", true, false}, // any value
		{false, "", false, false},
	} {
		if got := useColor(c.noColor, c.env, c.tty); got != c.want {
			t.Errorf("useColor(%v, %q, %v) = %v, want %v", c.noColor, c.env, c.tty, got, c.want)
		}
	}
}
