import { afterEach, describe, expect, it, vi } from 'vitest';
import { keepStopSignals, onStopSignal, REPEAT_WINDOW_MS, signalExitCode } from '../../src/cli/signals.ts';

// The keeper in this process, with a stand-in for process.exit; launcher.test.ts runs the real one.
describe('signal keeper', () => {
  afterEach(() => {
    expect(process.listenerCount('SIGTERM')).toBe(0);
    expect(process.listenerCount('SIGINT')).toBe(0);
  });

  it('ends the process with 128 + the signal number until a command takes the signals over', () => {
    const exit = vi.fn();
    keepStopSignals(exit);
    process.emit('SIGTERM');
    process.emit('SIGINT');
    expect(exit.mock.calls).toEqual([[143], [130]]);
    onStopSignal(() => {})();
  });

  it('hands the signals over to the command without a moment with no listener, and then stays out', () => {
    const exit = vi.fn();
    keepStopSignals(exit);
    const left: number[] = [];
    const onRemove = (name: string | symbol) => {
      if (name === 'SIGTERM') left.push(process.listenerCount('SIGTERM'));
    };
    process.on('removeListener', onRemove);
    const listener = vi.fn();
    const off = onStopSignal(listener);
    process.off('removeListener', onRemove);
    // Node stops watching a signal when its last listener goes: for PID 1, one then is dropped.
    expect(left).toEqual([1]);
    process.emit('SIGTERM');
    expect(listener).toHaveBeenCalledWith('SIGTERM');
    expect(exit).not.toHaveBeenCalled();
    off();
  });

  // The command's listener went at the first: as PID 1, a second signal was dropped and the stop ran
  // its course (a verifier's drain, a start-up's grace); a second Ctrl-C elsewhere killed it.
  it('ends the process with 128 + the number of a second stop signal while the command stops, until it has ended', () => {
    const exit = vi.fn();
    const listener = vi.fn();
    let clock = 0;
    const off = onStopSignal(listener, exit, () => clock);
    process.emit('SIGTERM');
    expect(listener.mock.calls).toEqual([['SIGTERM']]);
    expect(exit).not.toHaveBeenCalled();
    clock = REPEAT_WINDOW_MS;
    process.emit('SIGINT');
    process.emit('SIGTERM');
    expect(exit.mock.calls).toEqual([[130], [143]]);
    expect(listener).toHaveBeenCalledOnce();
    off();
  });

  // npm run and npx forward a terminal's Ctrl-C, which the command gets from the terminal as well: a
  // single Ctrl-C skipped the graceful stop.
  it('takes the same signal again within the repeat window for the first one delivered twice', () => {
    const exit = vi.fn();
    const listener = vi.fn();
    let clock = 1000;
    const off = onStopSignal(listener, exit, () => clock);
    process.emit('SIGINT');
    clock += REPEAT_WINDOW_MS - 1;
    process.emit('SIGINT');
    expect(listener.mock.calls).toEqual([['SIGINT']]);
    expect(exit).not.toHaveBeenCalled();
    clock += 1;
    process.emit('SIGINT');
    expect(exit.mock.calls).toEqual([[130]]);
    off();
  });

  it('ends the process on another stop signal at once, within the repeat window too', () => {
    const exit = vi.fn();
    const off = onStopSignal(
      () => {},
      exit,
      () => 0,
    );
    process.emit('SIGINT');
    process.emit('SIGTERM');
    expect(exit.mock.calls).toEqual([[143]]);
    off();
  });

  it('lets a command handle the signals without a keeper, as when main() is called directly', () => {
    const listener = vi.fn();
    const off = onStopSignal(listener);
    process.emit('SIGINT');
    off();
    expect(listener).toHaveBeenCalledWith('SIGINT');
    expect(signalExitCode('SIGINT')).toBe(130);
  });
});
