// The chat page as a web developer writes it with the AI SDK: useChat with a stable id (the chat's,
// from the address), its history loaded from the server's GET (session.uiMessages()), a reply still
// streaming resumed on load (resume: true: GET /api/chat/<id>/stream), tool parts shown by state,
// Approve / Deny with addToolApprovalResponse sent on by sendAutomaticallyWhen. Its elements carry
// data-testid for the browser test.
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai';
import { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';

const chatId = new URLSearchParams(location.search).get('chat') ?? 'default';

function Chat({ initial }: { initial: UIMessage[] }) {
  const { messages, sendMessage, addToolApprovalResponse, status, error, setMessages } = useChat({
    id: chatId,
    messages: initial,
    resume: true,
    transport: new DefaultChatTransport({ api: '/api/chat' }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState('');
  const abandon = async () => {
    await fetch(`/api/chat/${chatId}/abandon`, { method: 'POST' });
    setMessages(await (await fetch(`/api/chat/${chatId}`)).json());
  };
  return (
    <main>
      <ol data-testid="messages">
        {messages.map((message) => (
          <li key={message.id} data-role={message.role}>
            {message.parts.map((part, index) => {
              if (part.type === 'text') return <p key={index} className="text">{part.text}</p>;
              if (part.type !== 'tool-deploy' && part.type !== 'tool-weather') return null;
              return (
                <div key={index} className="tool" data-tool={part.type.slice(5)} data-state={part.state} data-call={part.toolCallId}>
                  {part.type.slice(5)} {JSON.stringify(part.input)}: {part.state}
                  {part.state === 'output-available' ? ` → ${String(part.output)}` : ''}
                  {part.state === 'output-denied' ? ` (${part.approval?.reason ?? 'denied'})` : ''}
                  {part.state === 'approval-requested' ? (
                    <>
                      <button data-testid="approve" onClick={() => addToolApprovalResponse({ id: part.approval.id, approved: true })}>Approve</button>
                      <button data-testid="deny" onClick={() => addToolApprovalResponse({ id: part.approval.id, approved: false, reason: 'not now' })}>Deny</button>
                      <button data-testid="abandon" onClick={() => void abandon()}>Cancel</button>
                    </>
                  ) : null}
                </div>
              );
            })}
          </li>
        ))}
      </ol>
      {error ? <p data-testid="error">{error.message}</p> : null}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (!input.trim()) return;
          void sendMessage({ text: input });
          setInput('');
        }}
      >
        <input data-testid="input" value={input} onChange={(event) => setInput(event.target.value)} />
        <button data-testid="send" type="submit" disabled={status !== 'ready' && status !== 'error'}>Send</button>
      </form>
      <span data-testid="status">{status}</span>
    </main>
  );
}

function App() {
  const [initial, setInitial] = useState<UIMessage[] | undefined>();
  useEffect(() => {
    void fetch(`/api/chat/${chatId}`).then(async (response) => setInitial(await response.json()));
  }, []);
  return initial ? <Chat initial={initial} /> : <p data-testid="loading">Loading…</p>;
}

createRoot(document.getElementById('root')!).render(<App />);
