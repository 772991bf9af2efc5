// The sign-in page: whoever signs in next in this tab finds none of the last person's conversations.
import { forgetStoredChats } from './stored-chats.js'

forgetStoredChats()
