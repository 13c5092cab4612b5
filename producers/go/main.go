// Command colony-inject is a producer that is not Python: it injects a batch of
// particles (the seeds' 72-byte schema) into one device of a running Colony over Arrow
// Flight, the same protocol Colony's own bulk path speaks (DoPut with a JSON command,
// the colony's bearer token in the authorization header), and prints the device's
// acknowledgement (the stored entry) as JSON on stdout.
//
//	colony-inject -location grpc://HOST:PORT -token-file ~/.ray/auth_token \
//	    -pool inject -key go/0 -particles 100000
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// particles builds n particles whose values are a pure function of the index, so a
// reader can check every one: id = particle_id = i, time = 7, x = i/2, y = 2i, z = -i,
// vx = vy = vz = 0.25.
func particles(mem memory.Allocator, n int) arrow.Record {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "time", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "particle_id", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "y", Type: arrow.PrimitiveTypes.Float64},
		{Name: "z", Type: arrow.PrimitiveTypes.Float64},
		{Name: "vx", Type: arrow.PrimitiveTypes.Float64},
		{Name: "vy", Type: arrow.PrimitiveTypes.Float64},
		{Name: "vz", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Uint64Builder).Append(uint64(i))
		b.Field(1).(*array.Uint64Builder).Append(7)
		b.Field(2).(*array.Uint64Builder).Append(uint64(i))
		b.Field(3).(*array.Float64Builder).Append(float64(i) / 2)
		b.Field(4).(*array.Float64Builder).Append(float64(i) * 2)
		b.Field(5).(*array.Float64Builder).Append(-float64(i))
		for f := 6; f < 9; f++ {
			b.Field(f).(*array.Float64Builder).Append(0.25)
		}
	}
	return b.NewRecord()
}

func main() {
	location := flag.String("location", "", "the device's Flight endpoint, grpc://host:port (colony status shows it)")
	tokenFile := flag.String("token-file", "", "file holding the colony's Ray token (else $RAY_AUTH_TOKEN)")
	pool := flag.String("pool", "inject", "pool to store the batch in")
	key := flag.String("key", "go/0", "key of the stored object")
	n := flag.Int("particles", 100000, "particles in the batch (72 bytes each)")
	flag.Parse()
	if *location == "" {
		fmt.Fprintln(os.Stderr, "colony-inject: -location is required (see `colony status`)")
		os.Exit(2)
	}
	token := os.Getenv("RAY_AUTH_TOKEN")
	if *tokenFile != "" {
		raw, err := os.ReadFile(*tokenFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "colony-inject: cannot read the token: %v\n", err)
			os.Exit(2)
		}
		token = strings.TrimSpace(string(raw))
	}
	if err := run(strings.TrimPrefix(*location, "grpc://"), token, *pool, *key, *n); err != nil {
		fmt.Fprintf(os.Stderr, "colony-inject: %v\n", err)
		os.Exit(1)
	}
}

func run(addr, token, pool, key string, n int) error {
	client, err := flight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect %s: %w", addr, err)
	}
	defer client.Close()
	ctx := context.Background()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	stream, err := client.DoPut(ctx)
	if err != nil {
		return fmt.Errorf("DoPut: %w", err)
	}
	rec := particles(memory.DefaultAllocator, n)
	defer rec.Release()
	cmd, _ := json.Marshal(map[string]string{"op": "ingest", "pool": pool, "key": key, "from": "client"})
	w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
	// a failed Send only says io.EOF: the server's status (e.g. Unauthenticated) is read by Recv
	if err := w.Write(rec); err != nil {
		return fmt.Errorf("write batch: %w", streamStatus(stream, err))
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("close writer: %w", streamStatus(stream, err))
	}
	if err := stream.CloseSend(); err != nil {
		return fmt.Errorf("close send: %w", streamStatus(stream, err))
	}
	res, err := stream.Recv()
	if err != nil {
		return fmt.Errorf("the device refused the batch: %w", err)
	}
	fmt.Println(string(res.GetAppMetadata()))
	return nil
}

// streamStatus is the server's reason when a write failed because it closed the stream.
func streamStatus(stream flight.FlightService_DoPutClient, err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	if _, rerr := stream.Recv(); rerr != nil && !errors.Is(rerr, io.EOF) {
		return rerr
	}
	return err
}
