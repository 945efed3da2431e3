package dev.stagehand.console;

import dev.stagehand.archive.ArchiveBuffer;
import dev.stagehand.archive.ArchiveBuffer.FamilyVolume;
import dev.stagehand.archive.ArchiveRejected;
import dev.stagehand.tape.DriveRoles;
import dev.stagehand.tape.TapeLibrary;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.security.Principal;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.servlet.mvc.support.RedirectAttributes;

/**
 * The archive page: the landing buffer against its marks, what each file family has not yet on tape, the
 * write drives and the family each is writing, the families' volumes and the copies whose writes failed. An
 * operator deletes a file not yet on tape from there (the API's DELETE /api/v1/archive/files/{id}), audited.
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
    private final AuditLog audit;

    ArchivePage(ArchiveBuffer buffer, ConsoleViews views, TapeLibrary library, ObjectProvider<DriveRoles> roles, AuditLog audit) {
        this.buffer = buffer;
        this.audit = audit;
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

    /**
     * Takes a file not yet on tape (queued or failed) out of the archive, as the API's delete does: its producer registers
     * its right bytes anew. Refused (and audited as such) while a copy is being written, once archived, or while a stage
     * request wants it.
     */
    @PostMapping("/files/{id}/delete")
    String delete(@PathVariable long id, Principal who, RedirectAttributes flash) {
        try {
            ArchiveBuffer.ArchiveFileStatus was = buffer.delete(id);
            audit.record(who.getName(), "archive.delete", was.name(), "deleted (was " + was.state() + ", " + was.sizeBytes()
                    + " bytes; its buffer file " + was.path() + " left in place)", "ok");
            flash.addFlashAttribute("message", "Deleted " + was.name() + " from the archive (it was " + was.state()
                    + "); its buffer file is left in place and may be registered anew.");
        } catch (ArchiveRejected e) { // unknown, being written, archived, or wanted by a stage request
            audit.record(who.getName(), "archive.delete", "file " + id, e.getMessage(), "refused");
            flash.addFlashAttribute("error", "Not deleted: " + e.getMessage());
        }
        return "redirect:/console/archive";
    }

    /** Ages relative to the page's time ({@code ${ages.since(t)}} in the template). */
    record Ages(Instant now) {
        public Duration since(Instant t) {
            return t == null ? null : Duration.between(t, now);
        }
    }
}
