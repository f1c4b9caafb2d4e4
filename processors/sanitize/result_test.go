package sanitize_test

import (
	"context"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/processors/sanitize"
)

// result is what one Process call routed, by route, with its accounting.
type result struct {
	Out       []message.Message // RouteOutput
	OutRows   []int             // rows of each Out message
	Records   int               // rows in Out
	Dead      []message.Message // RouteDeadLetter
	DeadInfo  []deadInfo        // parallel to Dead
	RecordsIn int               // rows of every routed message
	Other     []pipeline.Routed // to any other route (none expected)
}

type deadInfo struct {
	Reason string
	Rows   int
}

// process runs p on msg and sorts what it routed.
func process(p pipeline.Processor, msg message.Message) (result, error) {
	rs, err := p.Process(context.Background(), msg)
	var res result
	for _, r := range rs {
		res.RecordsIn += r.Rows
		switch r.Route {
		case sanitize.RouteOutput:
			res.Out = append(res.Out, r.Msg)
			res.OutRows = append(res.OutRows, r.Rows)
			res.Records += r.Rows
		case sanitize.RouteDeadLetter:
			res.Dead = append(res.Dead, r.Msg)
			res.DeadInfo = append(res.DeadInfo, deadInfo{Reason: r.Reason, Rows: r.Rows})
		default:
			res.Other = append(res.Other, r)
		}
	}
	return res, err
}
