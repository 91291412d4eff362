// SPDX-License-Identifier: Apache-2.0
// The episodes of lasting conditions: when a watcher's condition has held for its limit, one
// event starts the episode (saying since when and why), the same event repeats every `repeat_ms`
// while it lasts, and one more ends it when the condition is gone. EpisodeBook turns each look's
// sightings into those events and into the changes to persist, so that a restarted daemon
// neither repeats the start of an open episode nor forgets to end it.
// Pure logic on explicit times (tests drive it with a fake clock); plain value; one thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuq::daemon {

// A condition a watcher saw holding at one look.
struct Sighting {
  std::string key;               // one per subject: "job.quiet:12", "queue.idle_with_work"
  std::string kind;              // the event kind
  std::optional<int64_t> job;    // the job the event is about, if any
  int64_t since_ms = 0;          // when the condition began; 0: when first sighted
  int64_t limit_ms = 0;          // how long it must hold before the episode starts
  nlohmann::json detail = nlohmann::json::object();  // why: merged into the event's data
  // The watcher cannot tell now (a check is running, no GPU sample yet): an open episode stays
  // open, unchanged; nothing starts.
  bool unknown = false;
  // Its start and end are told by other events (resource.attention and resource.released):
  // the book only repeats it.
  bool reminder_only = false;
};

struct WatchEvent {
  std::string kind;
  std::optional<int64_t> job;
  nlohmann::json data;  // detail + phase ("start", "repeat", "end"), since, for_ms, reminder
};

// An open episode, as persisted (store::Store::Episode carries the same fields).
struct OpenEpisode {
  std::string key;
  std::string kind;
  std::optional<int64_t> job;
  int64_t since_ms = 0;
  int64_t reported_ms = 0;
  bool reminder_only = false;
  nlohmann::json detail = nlohmann::json::object();
};

// What one look changed: the events to record and the episodes to save or forget, to be
// committed together.
struct LookResult {
  std::vector<WatchEvent> events;
  std::vector<OpenEpisode> saved;       // opened or repeated
  std::vector<std::string> forgotten;   // ended (keys)
};

class EpisodeBook {
 public:
  explicit EpisodeBook(int64_t repeat_ms) : repeat_ms_(repeat_ms) {}

  // Episodes that were open when the daemon stopped. Call before the first look.
  void restore(std::vector<OpenEpisode> episodes);

  // Takes every sighting of one look, across all watchers: a key not sighted has ended.
  LookResult look(const std::vector<Sighting>& sightings, int64_t now_ms);

  // The earliest time a start or a repeat falls due (0 when none): when to look next at the
  // latest, on top of the regular interval.
  int64_t next_due_ms() const;

  const std::map<std::string, OpenEpisode>& open() const { return open_; }

 private:
  WatchEvent event(const OpenEpisode& episode, const char* phase, int64_t now_ms) const;

  int64_t repeat_ms_;
  std::map<std::string, OpenEpisode> open_;
  std::map<std::string, int64_t> first_seen_;  // sightings without a since of their own
  int64_t next_due_ms_ = 0;
};

// For persisting: OpenEpisode <-> JSON data of a store row.
nlohmann::json episode_data(const OpenEpisode& episode);
OpenEpisode episode_from(const std::string& key, const std::string& kind, int64_t since_ms,
                         int64_t reported_ms, const nlohmann::json& data);

}  // namespace gpuq::daemon
