// Writes Arrow's Flight.proto and FlightSql.proto, as compiled into arrow-go (pinned in
// go.mod), as one FileDescriptorSet on stdout; scripts/flightsql_proto.sh turns it into
// Python message classes with protoc. Arrow's .proto sources are not shipped by any
// package registry reachable here; the descriptors arrow-go embeds are the same files.
package main

import (
	"os"

	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

func main() {
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		for i := 0; i < fd.Imports().Len(); i++ {
			add(fd.Imports().Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	add(flightgen.File_Flight_proto)
	add(flightgen.File_FlightSql_proto)
	b, err := proto.Marshal(set)
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(b)
}
