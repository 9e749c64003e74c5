package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookrelay/hookrelay/bench/searchbench"
)

// options are the command line's flags.
type options struct {
	database  string
	workers   int
	shape     searchbench.Shape
	measure   searchbench.MeasureConfig
	hookrelay string
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (string, options, error) {
	o := options{shape: searchbench.DefaultShape(time.Now()), measure: searchbench.DefaultMeasureConfig()}
	fs := flag.NewFlagSet("hookrelay-searchbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.database, "database", "hookrelay_search", "database to create (fill) and search")
	fs.IntVar(&o.workers, "workers", 2, "fill statements run at a time")
	fs.Int64Var(&o.shape.Messages, "messages", o.shape.Messages, "callbacks to write")
	fs.IntVar(&o.shape.Days, "days", o.shape.Days, "days before now they are spread over")
	fs.IntVar(&o.shape.PayloadBytes, "payload-bytes", o.shape.PayloadBytes, "size of each payload")
	fs.IntVar(&o.shape.PerKey, "per-key", o.shape.PerKey, "callbacks per tracking number")
	fs.IntVar(&o.measure.Searches, "searches", o.measure.Searches, "searches by tracking number of each kind to time")
	fs.IntVar(&o.measure.Lists, "lists", o.measure.Lists, "listings of each kind to time")
	fs.StringVar(&o.measure.OutDir, "out", o.measure.OutDir, "directory for results.json and plans.log (empty: none)")
	fs.StringVar(&o.measure.PGLog, "pg-log", o.measure.PGLog, "the server's log file: its plans go to plans.log (auto_explain; needs a superuser)")
	fs.DurationVar(&o.measure.Budget, "budget", o.measure.Budget, "time spent timing one kind of search at most")
	only := fs.String("only", "", "time only the kinds of search whose name matches this regular expression")
	fs.StringVar(&o.hookrelay, "hookrelay", "", "hookrelay binary to serve the API (default: beside this one, then PATH)")
	if err := fs.Parse(args); err != nil {
		return "", o, err
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return "", o, fmt.Errorf("-only: %w", err)
		}
		o.measure.Only = re
	}
	if fs.NArg() != 1 {
		return "", o, errors.New("give one command: fill, measure or all")
	}
	if getenv("DATABASE_URL") == "" {
		return "", o, errors.New("DATABASE_URL (the server to fill) is not set")
	}
	return fs.Arg(0), o, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd, o, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	server := getenv("DATABASE_URL")
	out := json.NewEncoder(stdout)
	switch cmd {
	case "finish":
		rep, err := finish(ctx, server, o, stderr)
		if err != nil {
			return err
		}
		return out.Encode(map[string]any{"finish": rep})
	case "fill", "all":
		rep, err := fill(ctx, server, o, stderr)
		if err != nil {
			return err
		}
		if err := out.Encode(map[string]any{"fill": rep}); err != nil {
			return err
		}
		if cmd == "fill" {
			return nil
		}
		fallthrough
	case "measure":
		dbURL, err := searchbench.DatabaseURL(server, o.database)
		if err != nil {
			return err
		}
		bin, err := findHookrelay(o.hookrelay, getenv)
		if err != nil {
			return err
		}
		res, err := searchbench.Measure(ctx, dbURL, bin, o.shape, o.measure, stderr)
		if err != nil {
			return err
		}
		return out.Encode(res)
	default:
		return fmt.Errorf("unknown command %q: fill, measure or all", cmd)
	}
}

func fill(ctx context.Context, server string, o options, log io.Writer) (searchbench.FillReport, error) {
	dbURL, err := searchbench.CreateDatabase(ctx, server, o.database, log)
	if err != nil {
		return searchbench.FillReport{}, err
	}
	pool, err := fillPool(ctx, dbURL, o.workers)
	if err != nil {
		return searchbench.FillReport{}, err
	}
	defer pool.Close()
	return searchbench.Fill(ctx, pool, o.shape, o.workers, log)
}

// finish resumes an interrupted fill after its loads.
func finish(ctx context.Context, server string, o options, log io.Writer) (searchbench.FillReport, error) {
	dbURL, err := searchbench.DatabaseURL(server, o.database)
	if err != nil {
		return searchbench.FillReport{}, err
	}
	pool, err := fillPool(ctx, dbURL, o.workers)
	if err != nil {
		return searchbench.FillReport{}, err
	}
	defer pool.Close()
	var end time.Time
	if err := pool.QueryRow(ctx, `SELECT max(received_at) FROM messages_p`+time.Now().UTC().Format("20060102")).Scan(&end); err != nil {
		return searchbench.FillReport{}, fmt.Errorf("the fill's end (today's messages): %w", err)
	}
	o.shape.End = end.Truncate(time.Minute).Add(time.Minute)
	return searchbench.Finish(ctx, pool, o.shape, o.workers, log)
}

func fillPool(ctx context.Context, dbURL string, workers int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(workers) + 1
	// The index builds and VACUUMs get memory.
	cfg.ConnConfig.RuntimeParams["maintenance_work_mem"] = "1GB"
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	return pgxpool.NewWithConfig(ctx, cfg)
}
