#pragma once

#include <caf/atom.hpp>

/// The verbs of the actor protocol. Each atom's text is at most 10 characters and clashes with none of
/// CAF's built-in atoms.
namespace cdui::atoms {

using submit = caf::atom_constant<caf::atom("cd_submit")>;
using enqueue = caf::atom_constant<caf::atom("cd_enqueue")>;
using dequeue = caf::atom_constant<caf::atom("cd_dequeue")>;
using grant = caf::atom_constant<caf::atom("cd_grant")>;
using release = caf::atom_constant<caf::atom("cd_release")>;
using append = caf::atom_constant<caf::atom("cd_append")>;
using finished = caf::atom_constant<caf::atom("cd_finish")>;
using cancel = caf::atom_constant<caf::atom("cd_cancel")>;
using events = caf::atom_constant<caf::atom("cd_events")>;
using wait = caf::atom_constant<caf::atom("cd_wait")>;
using info = caf::atom_constant<caf::atom("cd_info")>;
using list = caf::atom_constant<caf::atom("cd_list")>;
using timeout = caf::atom_constant<caf::atom("cd_timeout")>;

} // namespace cdui::atoms
