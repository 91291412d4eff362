// SPDX-License-Identifier: Apache-2.0
#include "daemon/episodes.h"

#include <algorithm>
#include <set>

#include "base/time.h"

namespace gpuq::daemon {

void EpisodeBook::restore(std::vector<OpenEpisode> episodes) {
  for (auto& episode : episodes) {
    std::string key = episode.key;
    open_[key] = std::move(episode);
  }
}

WatchEvent EpisodeBook::event(const OpenEpisode& episode, const char* phase, int64_t now_ms) const {
  nlohmann::json data = episode.detail.is_object() ? episode.detail : nlohmann::json::object();
  data["phase"] = phase;
  data["since"] = format_rfc3339(episode.since_ms);
  data["for_ms"] = now_ms - episode.since_ms;
  data["reminder"] = std::string_view(phase) == "repeat";
  return {episode.kind, episode.job, std::move(data)};
}

LookResult EpisodeBook::look(const std::vector<Sighting>& sightings, int64_t now_ms) {
  LookResult result;
  std::set<std::string> seen;
  std::map<std::string, int64_t> still_waiting;  // sighted, not yet long enough: key → since
  next_due_ms_ = 0;
  auto due = [this](int64_t at) { next_due_ms_ = next_due_ms_ == 0 ? at : std::min(next_due_ms_, at); };
  for (const Sighting& s : sightings) {
    seen.insert(s.key);
    if (auto it = open_.find(s.key); it != open_.end()) {
      OpenEpisode& episode = it->second;
      if (!s.unknown) {
        if (!s.detail.empty()) episode.detail = s.detail;
        if (now_ms - episode.reported_ms >= repeat_ms_) {
          episode.reported_ms = now_ms;
          result.events.push_back(event(episode, "repeat", now_ms));
          result.saved.push_back(episode);
        }
      }
      due(episode.reported_ms + repeat_ms_);
      continue;
    }
    int64_t since = s.since_ms;
    if (since == 0) {
      auto first = first_seen_.find(s.key);
      since = first != first_seen_.end() ? first->second : now_ms;
    }
    if (s.unknown) {
      if (s.since_ms == 0 && first_seen_.count(s.key)) still_waiting[s.key] = since;
      continue;
    }
    if (now_ms - since < s.limit_ms) {
      if (s.since_ms == 0) still_waiting[s.key] = since;
      due(since + s.limit_ms);
      continue;
    }
    OpenEpisode episode{s.key, s.kind, s.job, since, now_ms, s.reminder_only, s.detail};
    if (!episode.reminder_only) result.events.push_back(event(episode, "start", now_ms));
    result.saved.push_back(episode);
    open_[s.key] = std::move(episode);
    due(now_ms + repeat_ms_);
  }
  for (auto it = open_.begin(); it != open_.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    if (!it->second.reminder_only) result.events.push_back(event(it->second, "end", now_ms));
    result.forgotten.push_back(it->first);
    it = open_.erase(it);
  }
  first_seen_ = std::move(still_waiting);
  return result;
}

int64_t EpisodeBook::next_due_ms() const { return next_due_ms_; }

nlohmann::json episode_data(const OpenEpisode& episode) {
  return {{"job", episode.job ? nlohmann::json(*episode.job) : nlohmann::json(nullptr)},
          {"reminder_only", episode.reminder_only},
          {"detail", episode.detail}};
}

OpenEpisode episode_from(const std::string& key, const std::string& kind, int64_t since_ms,
                         int64_t reported_ms, const nlohmann::json& data) {
  OpenEpisode episode;
  episode.key = key;
  episode.kind = kind;
  episode.since_ms = since_ms;
  episode.reported_ms = reported_ms;
  if (data.is_object()) {
    if (auto job = data.find("job"); job != data.end() && job->is_number_integer()) {
      episode.job = job->get<int64_t>();
    }
    episode.reminder_only = data.value("reminder_only", false);
    if (auto detail = data.find("detail"); detail != data.end() && detail->is_object()) {
      episode.detail = *detail;
    }
  }
  return episode;
}

}  // namespace gpuq::daemon
