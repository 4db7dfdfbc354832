package spec

import (
	"gopkg.in/yaml.v3"

	"github.com/rwc-dev/rwc/diag"
)

// PartitionIntervals are what one partition of a partitioned target may
// hold (partitioning: interval:).
var PartitionIntervals = []string{"day", "week", "month", "year"}

// loadPartitioning reads partitioning: (the JSON Schema has checked its
// shape: by and interval are there, interval is one of PartitionIntervals).
func loadPartitioning(key, n *yaml.Node, file string) *Partitioning {
	at := func(n *yaml.Node) diag.Pos { return diag.Pos{File: file, Line: n.Line, Column: n.Column} }
	p := &Partitioning{Pos: at(key), ByPos: at(n), IntervalPos: at(n)}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "by":
			p.By, p.ByPos = v.Value, at(v)
		case "interval":
			p.Interval, p.IntervalPos = v.Value, at(v)
		}
	}
	return p
}

// loadDistribution reads distribution: (the JSON Schema has checked its
// shape: "reference", or by and maybe colocate_with).
func loadDistribution(key, n *yaml.Node, file string) *Distribution {
	at := func(n *yaml.Node) diag.Pos { return diag.Pos{File: file, Line: n.Line, Column: n.Column} }
	d := &Distribution{Pos: at(key), ByPos: at(n), ColocatePos: at(n), Reference: n.Kind == yaml.ScalarNode && n.Value == DistributionReference}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "by":
			d.By, d.ByPos = v.Value, at(v)
		case "colocate_with":
			d.ColocateWith, d.ColocatePos = v.Value, at(v)
		}
	}
	return d
}
