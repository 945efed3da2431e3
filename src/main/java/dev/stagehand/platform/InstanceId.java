package dev.stagehand.platform;

import java.lang.management.ManagementFactory;
import java.net.InetAddress;

/** How a process names itself among the service's instances sharing one database (leases, claims, logs). */
public final class InstanceId {

    private InstanceId() {}

    /** {@code configured} when it is set, else "host:pid": unique among the processes running at one time. */
    public static String orHostAndPid(String configured) {
        if (configured != null && !configured.isBlank()) return configured;
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            host = "localhost";
        }
        return host + ":" + ManagementFactory.getRuntimeMXBean().getPid();
    }
}
