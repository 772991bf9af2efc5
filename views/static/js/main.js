// The workspace page's scripts (ES modules, no build step). htmx and its SSE extension are
// loaded before this module by the page.
import { initChat } from './chat.js'
import { initCommands } from './commands.js'
import { initCompileForm } from './compile-form.js'
import { initDialogs } from './dialogs.js'
import { initFiles } from './files.js'
import { initWorkspace } from './workspace.js'

initDialogs()
const chat = initChat()
initCommands({ chat })
initCompileForm()
initWorkspace({ chat })
initFiles({ chat })
