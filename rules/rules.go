// Package rules reads and checks validity rules: conditions a passing
// test case's metrics must meet for its PASS to count, such as
// "tokens_generated > 0" or "first_correct_response_s < 5". A case that
// reports PASS and breaks one is INVALID, with the rule and the value.
//
// A rule is METRIC OP NUMBER, with OP one of > >= < <= == != and NUMBER a
// finite decimal number.
package rules

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Rule is one parsed condition.
type Rule struct {
	Metric string
	Op     string
	Value  float64
}

var metricRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// ops in the order they are tried: two-character operators first.
var ops = []string{">=", "<=", "==", "!=", ">", "<"}

// Parse reads "METRIC OP NUMBER". The error says what was expected.
func Parse(s string) (Rule, error) {
	text := strings.TrimSpace(s)
	i, op := -1, ""
	for _, o := range ops {
		if j := strings.Index(text, o); j >= 0 && (i < 0 || j < i) {
			i, op = j, o
		}
	}
	if i < 0 {
		return Rule{}, fmt.Errorf("rule %q has no comparison (expected METRIC OP NUMBER with OP one of %s)", s, strings.Join(ops, " "))
	}
	r := Rule{Metric: strings.TrimSpace(text[:i]), Op: op}
	if !metricRE.MatchString(r.Metric) {
		return Rule{}, fmt.Errorf("rule %q: %q is not a metric name (expected letters, digits, '_' or '.')", s, r.Metric)
	}
	num := strings.TrimSpace(text[i+len(op):])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || strings.ContainsAny(num, "xXpP_") {
		return Rule{}, fmt.Errorf("rule %q: %q is not a number (expected a finite decimal like 5 or 0.25)", s, num)
	}
	r.Value = v
	return r, nil
}

// String is the rule as written in its canonical form: "tokens_generated > 0".
func (r Rule) String() string {
	return r.Metric + " " + r.Op + " " + strconv.FormatFloat(r.Value, 'g', -1, 64)
}

// Holds reports whether value meets the rule.
func (r Rule) Holds(value float64) bool {
	switch r.Op {
	case ">":
		return value > r.Value
	case ">=":
		return value >= r.Value
	case "<":
		return value < r.Value
	case "<=":
		return value <= r.Value
	case "==":
		return value == r.Value
	case "!=":
		return value != r.Value
	}
	return false
}

// Check applies rules to a case's metrics and returns why the case is
// not valid: the first rule broken ("rule guard_hits >= 5 broken:
// guard_hits is 3") or whose metric the case did not report; "" when all
// hold.
func Check(rs []Rule, metric func(name string) (float64, bool)) string {
	for _, r := range rs {
		v, ok := metric(r.Metric)
		if !ok {
			return fmt.Sprintf("rule %s: the case reported no %s", r, r.Metric)
		}
		if !r.Holds(v) {
			return fmt.Sprintf("rule %s broken: %s is %s", r, r.Metric, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return ""
}

// ParseAll parses rules written as text, as a manifest records them.
func ParseAll(texts []string) ([]Rule, error) {
	out := make([]Rule, 0, len(texts))
	for _, t := range texts {
		r, err := Parse(t)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
