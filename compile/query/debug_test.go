package query

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestDebug(t *testing.T) {
	q := os.Getenv("Q")
	if q == "" {
		t.Skip()
	}
	a, err := Analyze(q)
	if err != nil {
		fmt.Printf("ERR %+v\n", *err)
		return
	}
	b, _ := json.MarshalIndent(a, "", " ")
	fmt.Println(string(b))
	for _, c := range strings.Split(os.Getenv("C"), ",") {
		b, _ := json.Marshal(a.Lineage(c))
		fmt.Println(c, string(b))
	}
}
