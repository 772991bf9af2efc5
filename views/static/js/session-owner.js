// Every signed-in page says whose it is (the layout's <body data-login>): the tab's kept
// conversations are that person's, and another person's are forgotten before anything shows them
// (a tab that never saw the sign-out, whichever page it opens next). The layout loads this module
// before the page's own, so the chat restores nothing that is not the person's.
import { claimStoredChats } from './stored-chats.js'

const login = document.body.dataset.login
if (login) claimStoredChats(login)
