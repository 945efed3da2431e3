package dev.stagehand.transfer;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class TransferRatesTest {

    final AtomicLong now = new AtomicLong(1_000);
    final TransferRates rates = new TransferRates(now::get);

    static FileCopy copy(String dest, long size) {
        return new FileCopy("x", URI.create("file:///tmp/x"), URI.create(dest), size, null);
    }

    @Test
    void linkRateIsTheBytesOfTheLastTenSecondsAndHostsCountCompletedFiles() {
        FileCopy a = copy("ftp://127.0.0.1:4000/d/a", 50_000_000);
        for (int s = 0; s < 10; s++) {
            rates.bytes(a, 5_000_000);
            if (s == 4) rates.retrying(a, new TransferFailure(TransferFailure.Kind.STALL, "no progress"));
            if (s == 5) rates.retrying(a, new TransferFailure(TransferFailure.Kind.STALL, "no progress"));
            if (s == 9) rates.written(a, "127.0.0.1:4000", 1);
            now.incrementAndGet();
        }
        rates.bytes(a, 7_000_000); // this second is still filling: not in the rate yet

        TransferRates.LinkRate link = rates.links().getFirst();
        assertThat(link.link()).isEqualTo("ftp://127.0.0.1:4000");
        assertThat(link.mbPerSecond()).isEqualTo(5.0); // 50 MB over the 10 s before this second
        assertThat(link.files()).isEqualTo(1);
        assertThat(link.retries()).isEqualTo(Map.of(TransferFailure.Kind.STALL, 2L));
        TransferRates.HostRate host = rates.hosts().getFirst();
        assertThat(host.host()).isEqualTo("127.0.0.1:4000");
        assertThat(host.link()).isEqualTo("ftp://127.0.0.1:4000");
        assertThat(host.mbPerSecond()).isEqualTo(5.0);

        now.addAndGet(20); // out of the rate's 10 s, still in the 5-minute window
        assertThat(rates.links().getFirst().mbPerSecond()).isZero();
        assertThat(rates.links().getFirst().bytes()).isEqualTo(57_000_000);
        now.addAndGet(TransferRates.WINDOW_SECONDS);
        assertThat(rates.links()).isEmpty();
        assertThat(rates.hosts()).isEmpty();
    }

    @Test
    void linksAreNamedAsTheMoversNameThem() {
        assertThat(TransferRates.link(URI.create("gsiftp://a.example.org,b.example.org:2812/data/f")))
                .isEqualTo("gsiftp://a.example.org:2811,b.example.org:2812");
        assertThat(TransferRates.link(URI.create("FTP://anonymous@127.0.0.1:2811/f"))).isEqualTo("ftp://127.0.0.1:2811");
    }
}
