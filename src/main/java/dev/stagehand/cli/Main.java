package dev.stagehand.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code stagehand <subcommand>}: one executable, one subcommand per job. */
@Command(name = "stagehand", mixinStandardHelpOptions = true, version = "stagehand 0.1.0",
        description = "HSM/tape-aware archive staging service.",
        subcommands = {ServeCommand.class, DemoCommand.class, CatalogCommand.class, SimulateCommand.class,
                CopyCommand.class, TapeDemoCommand.class, CommandLine.HelpCommand.class})
public final class Main implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        int code = run(args);
        if (code != 0 || !isServing(args)) System.exit(code);
    }

    /** {@code serve} returns once the web server runs; its non-daemon threads keep the JVM alive. */
    private static boolean isServing(String[] args) {
        return args.length > 0 && args[0].equals("serve");
    }

    public static int run(String... args) {
        return new CommandLine(new Main()).setCaseInsensitiveEnumValuesAllowed(true).execute(args);
    }

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }
}
