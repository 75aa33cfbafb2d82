package bcifix;

/** Interfaces are never instrumented, default methods included. */
public interface Shape {
    int sides();

    default int twiceSides() {
        return 2 * sides();
    }
}
