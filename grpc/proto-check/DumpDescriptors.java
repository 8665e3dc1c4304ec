// Prints protobuf descriptors of apache.rocketmq.v2 as .proto-like text: with no argument those compiled into
// the rocketmq-proto jar on the classpath, with a FileDescriptorSet file as argument those of that set (the one
// build.rs writes from grpc/proto). check.sh diffs the two, field by field.
import com.google.protobuf.Descriptors.*;
import java.util.*;

public class DumpDescriptors {
    static StringBuilder out = new StringBuilder();

    public static void main(String[] args) throws Exception {
        List<FileDescriptor> files = new ArrayList<>();
        if (args.length == 0) {
            String[] classes = {"apache.rocketmq.v2.MQDomain", "apache.rocketmq.v2.MQService", "apache.rocketmq.v2.MQAdmin"};
            for (String c : classes) files.add((FileDescriptor) Class.forName(c).getMethod("getDescriptor").invoke(null));
        } else {
            com.google.protobuf.DescriptorProtos.FileDescriptorSet set = com.google.protobuf.DescriptorProtos.FileDescriptorSet
                .parseFrom(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(args[0])));
            Map<String, FileDescriptor> built = new HashMap<>();
            for (com.google.protobuf.DescriptorProtos.FileDescriptorProto p : set.getFileList()) {
                List<FileDescriptor> deps = new ArrayList<>();
                for (String d : p.getDependencyList()) deps.add(built.get(d));
                FileDescriptor fd = FileDescriptor.buildFrom(p, deps.toArray(new FileDescriptor[0]));
                built.put(p.getName(), fd);
            }
            for (String n : new String[] {"apache/rocketmq/v2/definition.proto", "apache/rocketmq/v2/service.proto",
                    "apache/rocketmq/v2/admin.proto"}) files.add(built.get(n));
        }
        for (FileDescriptor fd : files) {
            out.append("// ===== ").append(fd.getName()).append('\n');
            out.append("syntax = \"").append(fd.toProto().getSyntax()).append("\";\n");
            out.append("package ").append(fd.getPackage()).append(";\n");
            for (FileDescriptor dep : fd.getDependencies()) out.append("import \"").append(dep.getName()).append("\";\n");
            for (EnumDescriptor e : fd.getEnumTypes()) dumpEnum(e, "");
            for (Descriptor m : fd.getMessageTypes()) dumpMessage(m, "");
            for (ServiceDescriptor s : fd.getServices()) {
                out.append("service ").append(s.getName()).append(" {\n");
                for (MethodDescriptor md : s.getMethods()) {
                    out.append("  rpc ").append(md.getName()).append(" (")
                       .append(md.toProto().getClientStreaming() ? "stream " : "").append(md.getInputType().getFullName())
                       .append(") returns (").append(md.toProto().getServerStreaming() ? "stream " : "")
                       .append(md.getOutputType().getFullName()).append(");\n");
                }
                out.append("}\n");
            }
        }
        System.out.print(out);
    }

    static void dumpEnum(EnumDescriptor e, String ind) {
        out.append(ind).append("enum ").append(e.getName()).append(" {\n");
        for (EnumValueDescriptor v : e.getValues())
            out.append(ind).append("  ").append(v.getName()).append(" = ").append(v.getNumber()).append(";\n");
        out.append(ind).append("}\n");
    }

    static String type(FieldDescriptor f) {
        switch (f.getType()) {
            case MESSAGE: return f.getMessageType().getFullName();
            case ENUM: return f.getEnumType().getFullName();
            default: return f.getType().name().toLowerCase(Locale.ROOT);
        }
    }

    static String field(FieldDescriptor f) {
        String label = "";
        if (f.isMapField()) {
            Descriptor entry = f.getMessageType();
            return "map<" + type(entry.findFieldByName("key")) + ", " + type(entry.findFieldByName("value")) + "> "
                + f.getName() + " = " + f.getNumber() + ";";
        }
        if (f.isRepeated()) label = "repeated ";
        else if (f.toProto().getProto3Optional()) label = "optional ";
        return label + type(f) + " " + f.getName() + " = " + f.getNumber() + ";";
    }

    static void dumpMessage(Descriptor m, String ind) {
        out.append(ind).append("message ").append(m.getName()).append(" {\n");
        String in = ind + "  ";
        for (EnumDescriptor e : m.getEnumTypes()) dumpEnum(e, in);
        for (Descriptor n : m.getNestedTypes()) if (!n.getOptions().getMapEntry()) dumpMessage(n, in);
        Set<OneofDescriptor> done = new HashSet<>();
        for (FieldDescriptor f : m.getFields()) {
            OneofDescriptor o = f.getContainingOneof();
            if (o != null && !f.toProto().getProto3Optional()) {
                if (done.add(o)) {
                    out.append(in).append("oneof ").append(o.getName()).append(" {\n");
                    for (FieldDescriptor of : o.getFields()) out.append(in).append("  ").append(field(of)).append('\n');
                    out.append(in).append("}\n");
                }
                continue;
            }
            out.append(in).append(field(f)).append('\n');
        }
        out.append(ind).append("}\n");
    }
}
