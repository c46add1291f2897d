import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

/** A tracer whose finished spans are kept in memory, for tests that check acx's spans. */
export function tracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { tracer: provider.getTracer('acx-test'), spans: () => exporter.getFinishedSpans() };
}

export const byName = (spans: readonly ReadableSpan[], name: string): ReadableSpan[] => spans.filter((span) => span.name === name);
export const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;
