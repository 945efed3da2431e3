package dev.stagehand.console;

import dev.stagehand.archive.ArchiveBuffer;
import dev.stagehand.archive.ArchiveBuffer.FamilyVolume;
import dev.stagehand.tape.DriveRoles;
import dev.stagehand.tape.TapeLibrary;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;

/**
 * The archive page: the landing buffer against its marks, what each file family has not yet on tape, the
 * write drives and the family each is writing, the families' volumes and the copies whose writes failed.
 */
@Controller
@RequestMapping("/console/archive")
class ArchivePage {

    /** A write drive and the family of the volume it holds (null: empty, or not an archive volume). */
    record WriteDrive(ConsoleViews.DriveRow drive, String family) {}

    private final ArchiveBuffer buffer;
    private final ConsoleViews views;
    private final TapeLibrary library;
    private final DriveRoles roles;

    ArchivePage(ArchiveBuffer buffer, ConsoleViews views, TapeLibrary library, ObjectProvider<DriveRoles> roles) {
        this.buffer = buffer;
        this.views = views;
        this.library = library;
        this.roles = roles.getIfAvailable(() -> new DriveRoles(1));
    }

    @GetMapping({"", "/live"})
    String page(Model model, HttpServletRequest http) {
        List<FamilyVolume> volumes = buffer.volumes(null);
        Map<String, String> familyOf = new HashMap<>();
        for (FamilyVolume v : volumes) familyOf.put(v.volume(), v.family());
        List<String> writers = roles.writeDrives(library.layout());
        Instant now = Instant.now();
        model.addAttribute("usage", buffer.usage());
        model.addAttribute("queues", buffer.queues());
        model.addAttribute("drives", views.drives().stream().filter(d -> writers.contains(d.name()))
                .map(d -> new WriteDrive(d, d.volume() == null ? null : familyOf.get(d.volume()))).toList());
        model.addAttribute("volumes", volumes);
        model.addAttribute("failures", buffer.failures(50));
        model.addAttribute("now", now);
        model.addAttribute("ages", new Ages(now));
        return LivePart.view("console/archive", http);
    }

    /** Ages relative to the page's time ({@code ${ages.since(t)}} in the template). */
    record Ages(Instant now) {
        public Duration since(Instant t) {
            return t == null ? null : Duration.between(t, now);
        }
    }
}
