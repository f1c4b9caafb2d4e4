package app

import (
	"slices"
	"testing"

	"github.com/dpsurv/dpsurv/kafkaconn"
)

func TestHealDecision(t *testing.T) {
	t.Parallel()
	owners := func(parts map[int]string, members ...string) kafkaconn.Owners {
		o := kafkaconn.Owners{Members: map[string]bool{}, Partitions: parts}
		for _, m := range members {
			o.Members[m] = true
		}
		return o
	}
	tests := []struct {
		name                  string
		me                    string
		owners                kafkaconn.Owners
		stalled               []int
		mine, nobodys, others []int
		act                   bool
	}{
		{"held here", "b", owners(map[int]string{0: "a", 1: "b"}, "a", "b"), []int{1}, []int{1}, nil, nil, true},
		{"held by nobody", "b", owners(map[int]string{0: "b"}, "b"), []int{1}, nil, []int{1}, nil, true},
		{"held by a dead member, this one elected", "b", owners(map[int]string{0: "b", 1: "z"}, "b", "z"), []int{1}, nil, nil, []int{1}, true},
		{"held by another member, a lower id elected", "c", owners(map[int]string{0: "b", 1: "z", 2: "c"}, "b", "c", "z"), []int{1}, nil, nil, []int{1}, false},
		{"the lowest id holds the stall: the next is elected", "c", owners(map[int]string{0: "a", 1: "c"}, "a", "c"), []int{0}, nil, nil, []int{0}, true},
		{"every member holds a stalled partition", "b", owners(map[int]string{0: "a", 1: "b"}, "a", "b"), []int{0, 1}, []int{1}, nil, []int{0}, true},
		{"every other member holds one, this one none", "c", owners(map[int]string{0: "a", 1: "b", 2: "c"}, "a", "b", "c"), []int{0, 1}, nil, nil, []int{0, 1}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mine, nobodys, others, act := healDecision(tc.me, tc.owners, tc.stalled)
			if !slices.Equal(mine, tc.mine) || !slices.Equal(nobodys, tc.nobodys) || !slices.Equal(others, tc.others) || act != tc.act {
				t.Errorf("healDecision = mine %v, nobody's %v, others' %v, act %v; want %v, %v, %v, %v",
					mine, nobodys, others, act, tc.mine, tc.nobodys, tc.others, tc.act)
			}
		})
	}
}
