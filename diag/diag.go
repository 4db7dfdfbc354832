// Package diag is the one diagnostic type that every rwc stage reports with:
// spec loading, predicate compilation, query analysis, lint, plan and run.
package diag

import (
	"fmt"
	"sort"
)

// Severity orders diagnostics; only errors make a command fail.
type Severity int

const (
	Warning Severity = iota
	Error
)

func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// MarshalText makes severities render as words in JSON output.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText accepts the words MarshalText writes.
func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "error":
		*s = Error
	case "warning":
		*s = Warning
	default:
		return fmt.Errorf("unknown severity %q", b)
	}
	return nil
}

// Pos is a position in a user's file. Line and Column are 1-based; zero
// means unknown (a diagnostic about a whole file has Line 0).
type Pos struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Column == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// Diagnostic is one finding: what is wrong, where, and how to fix it.
type Diagnostic struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	Pos
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

func (d Diagnostic) String() string {
	return fmt.Sprintf("%s: %s %s: %s", d.Pos, d.Severity, d.Code, d.Message)
}

// Error lets a single diagnostic travel as a Go error.
func (d Diagnostic) Error() string { return d.String() }

// List is an ordered collection of diagnostics.
type List []Diagnostic

// Add appends a diagnostic built from its parts.
func (l *List) Add(code string, sev Severity, pos Pos, hint, format string, args ...any) {
	*l = append(*l, Diagnostic{Code: code, Severity: sev, Pos: pos, Message: fmt.Sprintf(format, args...), Hint: hint})
}

// Errorf appends an error.
func (l *List) Errorf(code string, pos Pos, hint, format string, args ...any) {
	l.Add(code, Error, pos, hint, format, args...)
}

// Warnf appends a warning.
func (l *List) Warnf(code string, pos Pos, hint, format string, args ...any) {
	l.Add(code, Warning, pos, hint, format, args...)
}

// HasErrors reports whether any diagnostic is an error.
func (l List) HasErrors() bool {
	for _, d := range l {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Sort orders by file, line, column, then code, so output is stable.
func (l List) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Code < b.Code
	})
}

// Error makes a List usable as a Go error when it holds errors.
func (l List) Error() string {
	switch len(l) {
	case 0:
		return "no diagnostics"
	case 1:
		return l[0].String()
	}
	return fmt.Sprintf("%s (and %d more)", l[0], len(l)-1)
}
