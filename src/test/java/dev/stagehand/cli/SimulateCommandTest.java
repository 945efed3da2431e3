package dev.stagehand.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SimulateCommandTest {

    @TempDir
    Path tmp;

    String run(String... args) {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setOut(new PrintStream(buf, true));
        try {
            int code = Main.run(args);
            return code + "\n" + buf;
        } finally {
            System.setOut(old);
        }
    }

    @Test
    void jsonOutputIsOneObjectWithTheMetrics() throws Exception {
        Path w = tmp.resolve("w.csv");
        Files.writeString(w, """
                arrival_s,request,file,volume,offset_bytes,size_bytes,experiment,priority,dataset
                0.0,r1,/a,V1,0,400000000,atlas,0,d
                0.0,r1,/b,V2,1000000000000,400000000,atlas,0,d
                10.0,r2,/a,V1,0,400000000,atlas,0,d
                """);
        String out = run("simulate", "--workload", w.toString(), "--drives", "2", "--accessors", "1", "--json");
        assertThat(out).startsWith("0\n{");
        String json = out.substring(2).trim();
        assertThat(json.lines()).hasSize(1);
        for (String key : new String[] {"policy", "files", "bytes", "requests", "mounts", "volumes", "makespan_s",
                "lower_bound_s", "efficiency", "drive_utilization", "accessor_utilization", "locate_s_total",
                "bytes_per_mount", "latency_s", "mean", "p50", "p95", "max"}) {
            assertThat(json).contains("\"" + key + "\":");
        }
        assertThat(json).contains("\"policy\":\"tape-aware\"", "\"files\":2", "\"requests\":2", "\"mounts\":2");
        // one accessor: V2 (the longer tape) goes first; V1 moves at 6.7 s, loads, and /a is read by 31.4 s,
        // so r2 (arrived at 10 s) waits 21.4 s; r1 ends with /b at the lower bound: this schedule is optimal
        assertThat(json).contains("\"p50\":21.4000", "\"makespan_s\":67.5667", "\"lower_bound_s\":67.5667",
                "\"efficiency\":1.0000", "\"max\":67.5667").doesNotContain("NaN");
    }

    @Test
    void badArgumentsGiveAClearErrorAndExitCode() {
        assertThat(run("simulate", "--workload", tmp.resolve("missing.csv").toString())).startsWith("2\n");
        assertThat(run("simulate", "--workload", tmp.toString(), "--policy", "lifo")).startsWith("2\n");
    }

    @Test
    void aConfigFileSetsTheSchedulersPolicyAndTheLibrarysModel() throws Exception {
        Path w = tmp.resolve("w.csv");
        Files.writeString(w, """
                arrival_s,request,file,volume,offset_bytes,size_bytes,experiment,priority,dataset
                0.0,r1,/a,V1,0,40000000000,atlas,0,d
                0.0,r1,/b,V2,1000000000000,40000000000,atlas,0,d
                """);
        Path capped = tmp.resolve("capped.yml");
        Files.writeString(capped, """
                stagehand:
                  recall:
                    experiment-drive-caps:
                      atlas: 1
                  tape:
                    sim:
                      model:
                        bytes-per-second: 200000000
                """);
        String free = run("simulate", "--workload", w.toString(), "--drives", "2", "--accessors", "1", "--json");
        String one = run("simulate", "--workload", w.toString(), "--drives", "2", "--accessors", "1", "--json",
                "--config", capped.toString());
        assertThat(free).startsWith("0\n");
        assertThat(one).startsWith("0\n");
        // both tapes at once at 400 MB/s: 100 s reads side by side; one drive for atlas at 200 MB/s: 200 s
        // reads one after the other, with an unload between them
        assertThat(makespan(free)).isLessThan(200);
        assertThat(makespan(one)).isGreaterThan(400 + 100);
        // --policy overrides the file's; the documented configuration file is read as it is
        assertThat(run("simulate", "--workload", w.toString(), "--config", capped.toString(), "--policy", "greedy", "--json"))
                .contains("\"policy\":\"greedy\"");
        assertThat(run("simulate", "--workload", w.toString(), "--config", "config/application.yml", "--json"))
                .startsWith("0\n").contains("\"policy\":\"tape-aware\"");
    }

    @Test
    void aBadConfigFileGivesAClearErrorAndExitCode() throws Exception {
        Path w = tmp.resolve("w.csv");
        Files.writeString(w, "arrival_s,request,file,volume,offset_bytes,size_bytes,experiment,priority,dataset\n"
                + "0.0,r1,/a,V1,0,400000000,atlas,0,d\n");
        Path badValue = tmp.resolve("bad-value.yml");
        Files.writeString(badValue, "stagehand:\n  recall:\n    aging-limit: soon\n");
        Path badPolicy = tmp.resolve("bad-policy.yml");
        Files.writeString(badPolicy, "stagehand:\n  recall:\n    policy: lifo\n");
        Path notYaml = tmp.resolve("not.yml");
        Files.writeString(notYaml, "stagehand: [unclosed\n");
        Path misspelt = tmp.resolve("misspelt.yml"); // would leave the default aging limit in force unnoticed
        Files.writeString(misspelt, "stagehand:\n  recall:\n    aging-limt: 1h\n");
        for (Path c : new Path[] {badValue, badPolicy, notYaml, misspelt, tmp.resolve("missing.yml")}) {
            PrintStream old = System.err;
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            System.setErr(new PrintStream(err, true));
            try {
                assertThat(run("simulate", "--workload", w.toString(), "--config", c.toString())).startsWith("2\n");
            } finally {
                System.setErr(old);
            }
            assertThat(err.toString()).startsWith("simulate: ").contains(c.getFileName().toString());
            if (c == misspelt) assertThat(err.toString()).contains("unknown setting stagehand.recall.aging-limt", "aging-limit");
        }
    }

    static double makespan(String out) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"makespan_s\":([0-9.]+)").matcher(out);
        assertThat(m.find()).isTrue();
        return Double.parseDouble(m.group(1));
    }
}
