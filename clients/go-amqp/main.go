// Client driver for github.com/Azure/go-amqp: the JSON-lines command protocol of clients/PROTOCOL.md.
//
// Every call into the library carries a comment citing go-amqp's own documentation (its godoc comments) or
// example (example_test.go) at the pinned releases v1.4.0 and v1.7.0. go-amqp's Sender has no drain API: it
// reads a receiver's flow into its credit and never looks at the drain flag (sender.go muxHandleFrame), so the
// application has no way to answer a drain; this driver reports no `drains`.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	amqp "github.com/Azure/go-amqp"
)

type request struct {
	ID        int    `json:"id"`
	Op        string `json:"op"`
	URL       string `json:"url"`
	Address   string `json:"address"`
	Credit    int32  `json:"credit"`
	Count     int    `json:"count"`
	TimeoutMs int    `json:"timeout_ms"`
}

var (
	conn     *amqp.Conn
	session  *amqp.Session
	receiver *amqp.Receiver
	sender   *amqp.Sender
	manual   bool
)

func timeout(r request, dflt int) time.Duration {
	if r.TimeoutMs > 0 {
		return time.Duration(r.TimeoutMs) * time.Millisecond
	}
	return time.Duration(dflt) * time.Millisecond
}

func run(r request) (map[string]any, error) {
	out := map[string]any{}
	switch r.Op {
	case "connect":
		ctx, cancel := context.WithTimeout(context.Background(), timeout(r, 5000))
		defer cancel()
		var err error
		// example_test.go: conn, err := amqp.Dial(ctx, "amqps://...", &amqp.ConnOptions{SASLType: ...});
		// sasl.go SASLTypeAnonymous: "enables SASL ANONYMOUS authentication for the connection"
		conn, err = amqp.Dial(ctx, r.URL, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
		if err != nil {
			return nil, err
		}
		// example_test.go: session, err := conn.NewSession(ctx, nil)
		session, err = conn.NewSession(ctx, nil)
		return out, err
	case "receiver":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		credit := r.Credit
		manual = credit == 0
		if manual {
			credit = -1
		}
		var err error
		// example_test.go: session.NewReceiver(ctx, "/queue-name", nil); link_options.go ReceiverOptions.Credit:
		// "Setting this to -1 requires manual management of link credit. Credits can be added with
		// IssueCredit(), and links can also be drained with DrainCredit()"
		receiver, err = session.NewReceiver(ctx, r.Address, &amqp.ReceiverOptions{Credit: credit})
		if manual {
			out["api"] = "NewReceiver(Credit: -1), IssueCredit(1), Receive(ctx with timeout), DrainCredit"
		} else {
			out["api"] = fmt.Sprintf("NewReceiver(Credit: %d), Receive(ctx with timeout)", credit)
		}
		return out, err
	case "receive":
		got := []string{}
		count := r.Count
		if count == 0 {
			count = 1
		}
		out["timeout"] = false
		settleErrors := []string{}
		defer func() {
			if len(settleErrors) > 0 {
				out["settle_errors"] = settleErrors
			}
		}()
		for i := 0; i < count; i++ {
			if manual {
				// receiver.go IssueCredit: "adds credits to be requested in the next flow request"
				if err := receiver.IssueCredit(1); err != nil {
					out["messages"] = got
					return out, err
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout(r, 1000))
			// example_test.go: msg, err := receiver.Receive(ctx, nil); receiver.go Receive: "Blocks until a
			// message is received, ctx completes, or an error occurs"
			msg, err := receiver.Receive(ctx, nil)
			cancel()
			if err == context.DeadlineExceeded && manual {
				dctx, dcancel := context.WithTimeout(context.Background(), timeout(r, 1000))
				// receiver.go DrainCredit: "sets the drain flag on the next outbound FLOW frame and blocks until
				// the corresponding FLOW frame is received. While a drain is in progress, messages can continue
				// to arrive."
				derr := receiver.DrainCredit(dctx, nil)
				dcancel()
				if derr != nil {
					out["messages"] = got
					return out, derr
				}
				// receiver.go Prefetched: "returns the next message that is stored in the Receiver's prefetch
				// cache" (one that arrived during the drain)
				if m := receiver.Prefetched(); m != nil {
					msg, err = m, nil
				}
			}
			if err == context.DeadlineExceeded {
				out["timeout"] = true
				break
			}
			if err != nil {
				out["messages"] = got
				return out, err
			}
			got = append(got, fmt.Sprint(msg.Value)) // what the library returned to the application
			// example_test.go: receiver.AcceptMessage(context.TODO(), msg); receiver.go Receive: "if the sender is
			// configured in any mode other than SenderSettleModeSettled, you *must* take an action on the message"
			if aerr := receiver.AcceptMessage(context.Background(), msg); aerr != nil {
				settleErrors = append(settleErrors, aerr.Error())
			}
		}
		out["messages"] = got
		return out, nil
	case "stop":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out["api"] = "receiver.Close()"
		// example_test.go: receiver.Close(ctx); receiver.go Close: "closes the Receiver and AMQP link"
		return out, receiver.Close(ctx)
	case "sender":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		// example_test.go: sender, err := session.NewSender(ctx, "/queue-name", nil)
		sender, err = session.NewSender(ctx, r.Address, nil)
		return out, err
	case "send":
		sent := 0
		for i := 0; i < max(r.Count, 1); i++ {
			ctx, cancel := context.WithTimeout(context.Background(), timeout(r, 5000))
			// example_test.go: err = sender.Send(ctx, amqp.NewMessage([]byte("Hello!")), nil); sender.go Send:
			// "ctx controls waiting for the message to be sent and possibly confirmed"
			err := sender.Send(ctx, amqp.NewMessage([]byte(fmt.Sprintf("m%d", i))), nil)
			cancel()
			if err != nil {
				out["sent"] = sent
				return out, err
			}
			sent++
		}
		out["sent"] = sent
		return out, nil
	case "poll":
		return out, nil
	case "close":
		if conn != nil {
			// example_test.go: defer conn.Close()
			err := conn.Close()
			conn = nil
			return out, err
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown op %s", r.Op)
}

func main() {
	version := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/Azure/go-amqp" {
				version = d.Version
			}
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(map[string]any{"id": 0, "ok": true, "ready": true, "library": "go-amqp", "version": version})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			continue
		}
		if r.Op == "exit" {
			break
		}
		t0 := time.Now()
		out, err := run(r)
		if out == nil {
			out = map[string]any{}
		}
		out["id"] = r.ID
		out["ok"] = err == nil
		if err != nil {
			out["error"] = err.Error()
		}
		out["ms"] = time.Since(t0).Milliseconds()
		enc.Encode(out)
	}
}
